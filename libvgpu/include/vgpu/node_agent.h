// The node side of slurm-vgpu: what the Prolog, the Epilog and the planner daemon do on a node.
// Every host boundary is an interface (GPU backend, Slurm commands, scrubbing, slurmd signalling),
// so the flows themselves are plain C++ that tests drive with doubles or with the fake NVML.
//
// Race-free handover with Slurm (see docs/design.md):
//   - Slurm only allocates what the advertisement lists; the prolog claims a planned slot for
//     every allocated unit under the ledger lock, then creates the instance at that placement.
//   - A re-plan that drops advertised slots first shrinks the advertisement to the slots that
//     survive, keeps the dropped ones claimable, and only frees them once slurmctld reports the
//     shrunk split and no allocation of those types lacks a claim. Then it grows to the new plan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "vgpu/backend.h"
#include "vgpu/gres_request.h"
#include "vgpu/ledger_store.h"
#include "vgpu/policy.h"
#include "vgpu/slurm_text.h"

namespace vgpu {

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  virtual Result<PendingJobs> pending_jobs() = 0;
  virtual Result<NodeGres> node_gres(const std::string& node) = 0;
  // Cancels a job that must not run, leaving `reason` in its Comment for squeue/scontrol.
  virtual Result<void> reject_job(JobId job, const std::string& reason) = 0;
  // Jobs Slurm has running (or configuring, completing) on `node`: who may keep a viz VM.
  virtual Result<std::set<JobId>> jobs_on_node(const std::string& /*node*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot list a node's jobs");
  }
  // What the job asked for per node (`squeue -j <job> -o %b`: "gres/vgpu:1g.10gb:2"), for a prolog
  // that got no VGPU_ALLOC although its job may hold vgpu (vgpu_alloc_for_prolog).
  virtual Result<std::string> job_tres_per_node(JobId /*job*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot list a job's GRES");
  }
  // slurmctld's own release (`scontrol show config`), which decides how a split reaches it.
  virtual Result<SlurmVersion> controller_version() {
    return fail(ErrorCode::unavailable, "this Slurm client cannot ask slurmctld's version");
  }
  // `scontrol update NodeName=<node> Gres=<value>` (see gres_split_value).
  virtual Result<void> set_node_gres(const std::string& /*node*/, const std::string& /*value*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot update a node's GRES");
  }
};
// squeue/scontrol/scancel from PATH (or $VGPU_SLURM_BIN), run without a shell. With
// $VGPU_DEMAND_FILE set, pending jobs are read from that file (written once per period for the
// whole cluster by `vgpu-planner --publish-demand`) instead of asking slurmctld from every node.
std::unique_ptr<SlurmClient> make_command_slurm_client();
// The pending-job listing in the format parse_pending_jobs() reads (one squeue call).
Result<std::string> squeue_pending_text();

enum class ScrubStatus { scrubbed, unavailable, failed };
struct ScrubOutcome {
  ScrubStatus status = ScrubStatus::failed;
  std::string detail;
};
class Scrubber {
 public:
  virtual ~Scrubber() = default;
  virtual ScrubOutcome scrub(const std::string& mig_uuid) = 0;
};
// Runs vgpu-scrub ($VGPU_SCRUB or the installed path) with CUDA_VISIBLE_DEVICES=<mig uuid>.
std::unique_ptr<Scrubber> make_command_scrubber();

// The host side of viz sessions (a VM with a (v)GPU per job, shown through noVNC): runs
// vgpu-viz, which owns libvirt, sysfs and websockify. See docs/viz.md.
struct VizStartRequest {
  JobId job = 0;
  std::string pool;
  std::string user;  // the job's user: owns the session's access file
};
struct VizStarted {
  std::string domain;
  std::string device;  // "none", "mdev:<parent>", ...
};
class VizLauncher {
 public:
  virtual ~VizLauncher() = default;
  virtual Result<VizStarted> start(const VizStartRequest& request) = 0;
  // Destroys the job's VM, device, token and access file; success when nothing is left.
  virtual Result<void> stop(JobId job) = 0;
  // Jobs that have a session record on this node.
  virtual Result<std::set<JobId>> sessions() = 0;
  // Removes every session, domain and device whose job is not in `live`; the jobs removed.
  virtual Result<std::set<JobId>> reap(const std::set<JobId>& live) = 0;
};
// Runs $VGPU_VIZ (default: vgpu-viz from PATH; its config from $VGPU_VIZ_CONFIG) with the
// node's policy file, where the viz pools are declared.
std::unique_ptr<VizLauncher> make_command_viz_launcher(std::string policy_path);

// Hands the split just written to advertisement.json to slurmctld, the way the controller's
// release needs (make_split_publisher below).
class SplitPublisher {
 public:
  virtual ~SplitPublisher() = default;
  virtual Result<void> publish(const std::map<std::string, int>& counts) = 0;
};

struct NodeContext {
  std::string node;
  std::string state_dir;  // $VGPU_STATE_DIR; this node's files live in <state_dir>/<node>/
  const PolicyFile* policy = nullptr;
  LedgerStore* ledger = nullptr;
  GpuBackend* backend = nullptr;
  SlurmClient* slurm = nullptr;
  Scrubber* scrubber = nullptr;
  VizLauncher* viz = nullptr;  // null: this node offers no viz pools
  SplitPublisher* publisher = nullptr;  // hands advertisement.json's split to slurmctld
  std::function<std::int64_t()> now;     // Unix seconds
  std::function<void(const std::string&)> log;
  int confirm_timeout_ms = 8000;  // how long a shrink waits for slurmctld to take the new split
  int confirm_poll_ms = 250;
  // Instances (and claims) of jobs Slurm no longer runs here -- an epilog that never ran or died
  // before releasing -- are released by the planner: a job must be missing from two queries in
  // a row (no release on one odd answer), queried at most every `ended_job_check_s` (viz VMs:
  // every round while any exist). The planner daemon keeps this state across rounds.
  // A shrink of the advertisement (capacity ended jobs gave back) that slurmctld has not yet been
  // seen to take; growth waits for it.
  bool shrink_unconfirmed = false;
  int ended_job_check_s = 60;
  std::int64_t last_ended_job_check = 0;
  std::set<JobId> missing_once;
  // Instances, by profile, that jobs here hold but slurmctld does not count as used: a restarted
  // slurmctld recovers running jobs' typed allocations before the node re-registers its split,
  // and never counts them again. They leave the advertisement (node_advertisement) until the jobs
  // end, so Slurm cannot hand them out a second time. Refreshed every planner round; only what
  // two rounds in a row saw counts (a job that just ended in Slurm is released a moment later).
  std::map<std::string, int> slurm_uncounted;
  std::map<std::string, int> slurm_uncounted_last_seen;
  // Rounds in a row that found slurmctld's split differing from the advertisement.
  int split_mismatch_rounds = 0;

  [[nodiscard]] std::string node_dir() const { return state_dir + "/" + node; }
};

// How a node's new split reaches slurmctld (docs/slurm.md, "How a split reaches slurmctld"):
//   before 23.11  slurmd re-registers on SIGHUP and gres_vgpu.so reports advertisement.json; the
//                 permanent zero-count type makes slurmctld take a same-total split;
//   23.11 on      slurmctld ignores a same-total split at registration unless the node has a
//                 zero-count type, so the split is set with `scontrol update NodeName=..
//                 Gres=..` (same total, every type listed). slurmctld still applies slurmd's own
//                 report at its restart and while a zero-count type exists, deleting what the
//                 report lacks (running jobs' allocations included), so the update is sent only
//                 once slurmd reports the same split: the plugin follows advertisement.json inside
//                 slurmd and records what it reports in slurmd-report.json.
// The controller's release is asked before the first handover, again after recheck_s and after
// any failed handover, so an upgrade of slurmctld across 23.11 is followed.
enum class SplitHandover { sighup, scontrol_update };
SplitHandover split_handover_for(const SlurmVersion& controller);
struct SplitPublisherTiming {
  int recheck_s = 600;
  int slurmd_report_ms = 5000;  // how long to wait for slurmd to report a new split
};
std::unique_ptr<SplitPublisher> make_split_publisher(NodeContext& ctx, std::function<bool()> signal_slurmd,
                                                     SplitPublisherTiming timing = {});

// The hardware's view in ledger terms (profile ids mapped to names through the catalog).
HardwareView hardware_view_from_snapshot(const NodeSnapshot& snapshot, const Catalog& catalog);

// Job id -> MIG uuids named by every jobs/<id>.json of the node; names of unreadable records go
// to `unreadable` when given.
std::map<JobId, std::set<std::string>> read_job_records(const NodeContext& ctx,
                                                        std::vector<std::string>* unreadable = nullptr);

// Everything that disagrees between the ledger, the hardware, the advertisement file and the
// job records; empty when the node is consistent. `vgpu-planner --verify` prints it.
Result<std::vector<std::string>> verify_node(NodeContext& ctx);

// The partitions (from the policy) this node serves, in policy order.
std::vector<const PartitionPolicy*> node_partitions(const PolicyFile& policy, const std::string& node);

// Loads the ledger; when there is none (first start, or a corrupt one was set aside) rebuilds it
// from the hardware and re-adopts instances named in surviving jobs/<id>.json records.
Result<Ledger> ensure_ledger(const NodeContext& ctx);

// VGPU_ALLOC as the prolog should use it. From Slurm 23.11 slurmctld loads gres/vgpu only when a
// node first registers after it started; a job it schedules before that gets no VGPU_ALLOC in its
// prolog although it holds vgpu here (seen on 26.05 right after a slurmctld restart). So when
// VGPU_ALLOC is empty for a job of a partition the policy gives vgpu, the job's own per-node request
// is asked from Slurm (squeue: fields Slurm formats, no user-chosen text). Empty: not a vgpu job.
Result<std::string> vgpu_alloc_for_prolog(const PolicyFile& policy, SlurmClient& slurm, JobId job,
                                          std::string_view partition, std::string_view vgpu_alloc_env);

struct PrologRequest {
  JobId job = 0;
  std::string user;
  std::string partition;
  std::string alloc;  // VGPU_ALLOC: "1g.10gb:2,3g.40gb:1"
};
struct PrologResult {
  std::vector<LedgerInstance> instances;  // the job's instances on this node
  bool rejected = false;                  // the job was cancelled with a reason
  std::string reason;
};
// Never an exception; an error means the node could not act at all (the caller logs it and still
// exits 0: a failing Prolog would drain the node).
Result<PrologResult> run_prolog(NodeContext& ctx, const PrologRequest& request);

struct EpilogResult {
  int destroyed = 0;
  int quarantined = 0;
  std::vector<std::string> problems;
};
// Ends the job's tenancy, scrubs and destroys its instances; safe to run any number of times.
Result<EpilogResult> run_epilog(NodeContext& ctx, JobId job, const std::string& end_reason);
// Scrubs and destroys every ownerless instance in scrubbing/destroying (work a crashed epilog
// left behind); the epilog and each planner round call it.
Result<EpilogResult> finish_released_instances(NodeContext& ctx);

struct PlannerRoundResult {
  bool advertisement_changed = false;
  bool shrink_confirmed = true;
  std::map<std::string, int> advertised;
  std::vector<std::string> notes;
};
// One planning round: reconcile with the hardware, read demand, re-plan, hand over to Slurm.
Result<PlannerRoundResult> run_planner_round(NodeContext& ctx);

// What Slurm should see for this node: instances owned by jobs plus every plan slot, by profile.
std::map<std::string, int> advertised_counts(const Ledger& ledger);
// The same plus the node's viz pools, each at its max_sessions (Slurm counts the sessions),
// less what slurmctld holds as free but jobs here own (ctx.slurm_uncounted).
std::map<std::string, int> node_advertisement(const NodeContext& ctx, const Ledger& ledger);
// Per profile: the instances and claimed slots jobs hold here (what Slurm should count as used).
std::map<std::string, int> held_by_jobs(const Ledger& ledger);
// Per profile: how many instances and claims of jobs here exceed what Slurm reports as used.
std::map<std::string, int> uncounted_by_slurm(const Ledger& ledger, const NodeGres& slurm);

// Viz sessions of a job (prolog side): every viz pool the job was given must belong to its
// partition and be asked for once; the VM is recorded in the ledger before it is started. An
// empty string: started (or none asked); otherwise why the job must be cancelled.
Result<std::string> start_viz_sessions(NodeContext& ctx, const PrologRequest& request,
                                       const std::vector<GresRequest>& viz);
// Epilog side: stops the job's VM (if any) and drops its ledger record; problems are reported.
void stop_viz_session(NodeContext& ctx, JobId job, std::vector<std::string>& problems);
// Planner side: jobs that own instances, claims or VMs here but that Slurm no longer runs here
// get the epilog's treatment (release, scrub, destroy, stop the VM). See NodeContext.
void release_ended_jobs(NodeContext& ctx, std::vector<std::string>& notes);
Result<void> write_advertisement(const NodeContext& ctx, std::uint64_t generation,
                                 const std::map<std::string, int>& counts);
Result<std::map<std::string, int>> read_advertised_counts(const NodeContext& ctx);
Result<void> write_job_record(const NodeContext& ctx, JobId job, const std::vector<LedgerInstance>& instances);

}  // namespace vgpu
