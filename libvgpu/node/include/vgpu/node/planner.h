// The planner daemon's round (vgpu-planner): reconcile the ledger with the hardware, turn Slurm's
// pending jobs into demand, re-plan the free space and hand the new split to Slurm without ever
// withdrawing a slot a job may already hold (docs/design.md, "The handover").
//   - Slurm only allocates what the advertisement lists; the prolog claims a planned slot for
//     every allocated unit under the ledger lock, then creates the instance at that placement.
//   - A re-plan that drops advertised slots first shrinks the advertisement to the slots that
//     survive, keeps the dropped ones claimable, and only frees them once slurmctld reports the
//     shrunk split and no allocation of those types lacks a claim. Then it grows to the new plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vgpu/node/context.h"
#include "vgpu/node/mig_mode_on_demand.h"

namespace vgpu {

// What the planner learns across rounds; the daemon owns one and passes it to every round.
struct PlannerState {
  // A shrink of the advertisement outside a handover (a quarantined or vanished instance's slot,
  // instances slurmctld no longer counts) that slurmctld has not yet been seen to take; growth
  // waits for it. Only a hint: each round also compares slurmctld's own split, so a restarted
  // planner that lost this waits too.
  bool shrink_unconfirmed = false;
  // Instances (and claims) of jobs Slurm no longer runs here -- an epilog that never ran or died
  // before releasing -- are released by the planner: a job must be missing from two queries in
  // a row (no release on one odd answer), queried at most every `ended_job_check_s` (viz VMs:
  // every round while any exist).
  int ended_job_check_s = 60;
  std::int64_t last_ended_job_check = 0;
  std::set<JobId> missing_once;
  // Instances, by profile, that jobs here hold but slurmctld does not count as used: a restarted
  // slurmctld recovers running jobs' typed allocations before the node re-registers its split,
  // and never counts them again. They leave the advertisement (node_advertisement) until the jobs
  // end, so Slurm cannot hand them out a second time. Refreshed every round; only what two rounds
  // in a row saw counts (a job that just ended in Slurm is released a moment later).
  std::map<std::string, int> slurm_uncounted;
  std::map<std::string, int> slurm_uncounted_last_seen;
  // The node's constant vgpu total as slurmctld last showed it (node_total_of): the advertisement
  // never sums to more, or the plugin would refuse it whole.
  std::optional<int> slurm_total;
  // Rounds in a row that found slurmctld's split differing from the advertisement, and how many
  // times in a row the split was handed over again for it: each resend waits twice as many rounds
  // as the one before, so a slurmctld slow to take splits is not sent more of them.
  int split_mismatch_rounds = 0;
  int resyncs_in_a_row = 0;
  // Every split handed to slurmctld counts one; a shrink's confirmation asks slurmctld directly at
  // most kConfirmQuestionsPerHandover times per handover, whatever the number of rounds it waits.
  std::uint64_t handovers = 0;
  std::uint64_t questions_for_handover = 0;
  int questions_asked = 0;
  // When this node last had pending demand to plan for (planner.idle_return_s).
  std::optional<std::int64_t> demand_last_seen;
  // For a published cluster view, up to a period old (contract/cluster_view.h): what it shows is
  // compared only with what happened here before it was taken. When this planner last handed a
  // split to slurmctld, when it first saw each job hold something here (a claim is at or before
  // that), and which view the ended-job check last read (one view never counts as two answers).
  std::int64_t split_handed_over_at = 0;
  std::map<JobId, std::int64_t> holder_first_seen;
  std::optional<std::int64_t> ended_job_check_view;
  // Whether this node is in each reservation the demand publisher booked for a pending wide job
  // (vgpu/node/wide_booking.h), asked once per reservation: they never move.
  std::map<std::string, bool> in_wide_reservation;
  // NVIDIA GPUs the last hardware snapshot found outside MIG mode, and those a policy's mig_mode
  // "whole" takes out of it: no MIG instance is planned on them. Those served whole (whole.<M>gb):
  // the ones with MIG off, unless a policy wants them partitioned, where the device access can
  // confine them.
  // A round whose snapshot failed keeps what the one before saw.
  std::set<int> gpus_without_mig;
  std::set<int> gpus_served_whole;
  // For a partition's mig_mode "on_demand" (vgpu/node/mig_mode_on_demand.h): the GPUs the snapshot
  // found with MIG off, those whose mode pending demand steers, and the modes the last round's
  // demand asked of them, which the next round's reconcile switches to.
  std::set<int> gpus_found_without_mig;
  std::set<int> gpus_on_demand;
  MigModeTargets mig_on_demand;
};

struct PlannerRoundResult {
  bool advertisement_changed = false;
  bool shrink_confirmed = true;
  std::map<std::string, int> advertised;
  int prepared = 0;  // instances created ahead of demand (policy planner.prepare_slots)
  std::vector<std::string> notes;
  std::optional<NodeGres> slurm_view;  // slurmctld's split of this node as the round read it
};
// One planning round: reconcile with the hardware, read demand, re-plan, hand over to Slurm.
Result<PlannerRoundResult> run_planner_round(NodeContext& ctx, PlannerState& state);

// Jobs that own instances, claims or VMs here but that Slurm no longer runs here get the
// epilog's treatment (release, scrub, destroy, stop the VM). See PlannerState.
void release_ended_jobs(NodeContext& ctx, PlannerState& state, std::vector<std::string>& notes);

}  // namespace vgpu
