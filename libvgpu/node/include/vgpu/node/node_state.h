// The node's state as the flows share it: the ledger (loaded, or rebuilt from the hardware), the
// files the plugin reads (advertisement.json, jobs/<id>.json) and what the node advertises.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vgpu/contract/job_record.h"
#include "vgpu/node/context.h"

namespace vgpu {

// The hardware's view in ledger terms (profile ids mapped to names through the catalog).
HardwareView hardware_view_from_snapshot(const NodeSnapshot& snapshot, const Catalog& catalog);

// Job id -> MIG uuids named by every jobs/<id>.json of the node; names of unreadable records go
// to `unreadable` when given.
std::map<JobId, std::set<std::string>> read_job_records(const NodeContext& ctx,
                                                        std::vector<std::string>* unreadable = nullptr);

// Everything that disagrees between the ledger, the hardware, the advertisement file and the
// job records; empty when the node is consistent. `vgpu-planner --verify` prints it.
Result<std::vector<std::string>> verify_node(NodeContext& ctx);

// The ledger entry of an instance made at `slot` (or found there unrecorded): idle, no owner, made
// `now`. The planner records it so when it prepares a slot; a prolog makes it its job's.
LedgerInstance instance_made_at(const PlanSlot& slot, const InstanceInfo& info, std::int64_t now);

// The partitions (from the policy) this node serves, in policy order.
std::vector<const PartitionPolicy*> node_partitions(const PolicyFile& policy, const std::string& node);

// One sentence per partition of this node whose scrub is required while no scrub can run here
// (Scrubber::unavailable_reason): the planner's round notes them and verify_node reports them, in
// the same words, so the log and `vgpu-planner --verify` name the same cause. Empty otherwise.
std::vector<std::string> required_scrub_problems(const NodeContext& ctx);

// Loads the ledger; when there is none (first start, or a corrupt one was set aside) rebuilds it
// from the hardware and re-adopts instances named in surviving jobs/<id>.json records.
Result<Ledger> ensure_ledger(const NodeContext& ctx);

// What Slurm should see for this node: instances owned by jobs plus every plan slot, by profile
// (adopted instances not among them: held_by_jobs).
std::map<std::string, int> advertised_counts(const Ledger& ledger);
// The same plus the node's viz pools, each at its max_sessions (Slurm counts the sessions),
// less what slurmctld holds as free but jobs here own (`uncounted`, PlannerState), and cut to the
// node's constant vgpu total when one is known (cap_to_node_total).
std::map<std::string, int> node_advertisement(const NodeContext& ctx, const Ledger& ledger,
                                              const std::map<std::string, int>& uncounted = {},
                                              std::optional<int> node_total = std::nullopt);
// The node's constant vgpu total (slurm.conf's `Gres=vgpu:free:<T>`) as slurmctld shows it: the sum
// of every type of a split padded with the `free` type. Unknown without that type.
std::optional<int> node_total_of(const NodeGres& slurm);
// The sum of every type's count in slurmctld's split (free and never included).
int split_sum(const NodeGres& slurm);
// Counts that sum to more than `total` (the plugin would refuse the whole advertisement and report
// everything free): units no job holds are left out until they fit, share types' first (a share
// type multiplies an instance into many units, which is how a plan outgrows a total sized for
// whole instances), then the largest counts'. Units jobs hold (`held`) always stay.
std::map<std::string, int> cap_to_node_total(std::map<std::string, int> counts, const std::map<std::string, int>& held,
                                             const std::set<std::string>& share_types, int total);
// Per profile: the instances and claimed slots jobs hold here (what Slurm should count as used).
// An adopted instance is not among them: its job (the layout before slurm-vgpu, "Moving in") asked
// Slurm for no vgpu, so Slurm never counts it, and advertising it would offer a busy instance.
std::map<std::string, int> held_by_jobs(const Ledger& ledger);
// Whether any vgpu of the node is in use: Slurm has some allocated (GresUsed: prologs not yet run
// included), an instance is adopted, or the ledger has some held by a job (a restarted or reconfigured slurmctld from 23.11
// forgets running jobs' typed allocations). The rule behind the node weight and node features.
bool vgpu_in_use_here(const NodeGres& slurm, const Ledger& ledger);
// Per profile: how many instances and claims of jobs here exceed what Slurm reports as used.
std::map<std::string, int> uncounted_by_slurm(const Ledger& ledger, const NodeGres& slurm);

Result<void> write_advertisement(const NodeContext& ctx, std::uint64_t generation,
                                 const std::map<std::string, int>& counts);
Result<std::map<std::string, int>> read_advertised_counts(const NodeContext& ctx);
// The job record of `instances` as the job is told about them: each one's GPU model, the hardware
// profile (a class's, where the job asked by need), memory and compute share.
Result<contract::JobRecord> job_record_of(const Ledger& ledger, JobId job,
                                          const std::vector<LedgerInstance>& instances);
Result<void> write_job_record(const NodeContext& ctx, const contract::JobRecord& record);

}  // namespace vgpu
