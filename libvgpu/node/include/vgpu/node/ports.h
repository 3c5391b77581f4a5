// The node flows' ports: what the prolog, the epilog and the planner talk to beyond this node's
// GPUs and state files. The adapters over Slurm's commands, vgpu-scrub and vgpu-viz live in the
// program that wires them (nodeagent/adapters/); tests drive the flows with doubles
// (libvgpu/node/test/node_doubles.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/shared_instance.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/slurm_text.h"

namespace vgpu {

// Where a planner's view of slurmctld comes from, for its log and metrics (docs/metrics.md).
struct ClusterViewStatus {
  std::string source;                 // "tcp:ctl1:6828", "/shared/slurm-vgpu/view"
  std::optional<std::int64_t> age_s;  // of the view last read; none before the first
  bool usable = false;                // fresh enough to steer by
  std::string problem;                // why not usable; "" when it is
  std::uint64_t direct_queries = 0;   // questions asked of slurmctld itself instead (rate-limited)
};

// The jobs slurmctld runs on a node, and when it said so.
struct NodeJobs {
  std::set<JobId> jobs;
  // Set when read from the published cluster view: the controller's clock when it was taken (a
  // job that started here after it is not in it). None: asked of slurmctld just now.
  std::optional<std::int64_t> published_at;
};

// The Slurm job a process on this node runs in, and the process's owner (the job's user).
struct ProcessJob {
  JobId job = 0;
  unsigned uid = 0;
  std::string user;
  bool operator==(const ProcessJob&) const = default;
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  virtual Result<PendingJobs> pending_jobs() = 0;
  // slurmctld's view of the node: from the published cluster view where there is one (then
  // NodeGres::published_at says when it was taken), else asked.
  virtual Result<NodeGres> node_gres(const std::string& node) = 0;
  // Asked of slurmctld now, whatever the cluster view: a shrink's confirmation cannot wait for the
  // next view (bounded per layout change).
  virtual Result<NodeGres> node_gres_now(const std::string& node) { return node_gres(node); }
  // None where the client asks slurmctld itself every time.
  [[nodiscard]] virtual std::optional<ClusterViewStatus> cluster_view_status() const { return std::nullopt; }
  // Cancels a job that must not run, leaving `reason` in its Comment for squeue/scontrol.
  virtual Result<void> reject_job(JobId job, const std::string& reason) = 0;
  // Puts a valid job Slurm started where the node had no room back in the queue, `reason` in its
  // Comment. Fails when Slurm will not requeue it (not a batch job, --no-requeue, JobRequeue=0).
  virtual Result<void> requeue_job(JobId /*job*/, const std::string& /*reason*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot requeue jobs");
  }
  // Jobs Slurm has running (or configuring, completing) on `node`: who may keep a viz VM.
  virtual Result<NodeJobs> jobs_on_node(const std::string& /*node*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot list a node's jobs");
  }
  // What the job asked for per node (`squeue -j <job> -o %b`: "gres/vgpu:1g.10gb:2"), for a prolog
  // that got no VGPU_ALLOC although its job may hold vgpu (vgpu_alloc_for_prolog).
  virtual Result<std::string> job_tres_per_node(JobId /*job*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot list a job's GRES");
  }
  // The job that process `pid` of this node belongs to, and who runs it; none when no job here
  // has it. `scontrol pidinfo`: this node's slurmd answers from its steps' process tracking, which
  // a job's processes cannot forge (an environment variable they could).
  virtual Result<std::optional<ProcessJob>> job_of_process(int /*pid*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot tell a process's job");
  }
  // slurmctld's own release (`scontrol show config`), which decides how a split reaches it.
  virtual Result<SlurmVersion> controller_version() {
    return fail(ErrorCode::unavailable, "this Slurm client cannot ask slurmctld's version");
  }
  // `scontrol update NodeName=<node> Gres=<value>` (see gres_split_value).
  virtual Result<void> set_node_gres(const std::string& /*node*/, const std::string& /*value*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot update a node's GRES");
  }
  // `scontrol update NodeName=<node> Weight=<weight>` (policy planner.node_weights).
  virtual Result<void> set_node_weight(const std::string& /*node*/, std::uint32_t /*weight*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot update a node's weight");
  }
  // `scontrol update NodeName=<node> AvailableFeatures=<f> ActiveFeatures=<f>` (policy
  // planner.node_features): `features` as with_planner_features writes them.
  virtual Result<void> set_node_features(const std::string& /*node*/, const std::string& /*features*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot update a node's features");
  }
  // The nodes (a Slurm hostlist) of one reservation the demand publisher booked for a wide job
  // (`scontrol -o show reservation <name>`).
  virtual Result<std::string> reservation_nodes(const std::string& /*name*/) {
    return fail(ErrorCode::unavailable, "this Slurm client cannot list a reservation's nodes");
  }
};

enum class ScrubStatus { scrubbed, unavailable, failed };
struct ScrubOutcome {
  ScrubStatus status = ScrubStatus::failed;
  std::string detail;
};
class Scrubber {
 public:
  virtual ~Scrubber() = default;
  virtual ScrubOutcome scrub(const std::string& mig_uuid) = 0;
  // Why no scrub can run on this node at all ("vgpu-scrub: not installed at ..."); empty when one
  // can. A package built without CUDA has no vgpu-scrub, and a partition whose scrub is required
  // then quarantines every instance its jobs release: the planner says so every round.
  [[nodiscard]] virtual std::string unavailable_reason() const { return ""; }
};

// Takes over released instances from an epilog that does not wait for their scrub
// (VGPU_SCRUB_AFTER_EPILOG=on, docs/admin.md): a process of their own scrubs and destroys them
// after the epilog has returned, so Slurm ends the job and hands its GRES on without waiting 0.7 s
// per instance (an H100's scrub); a prolog that claims one of them waits for that process as it
// waits for any cleanup. Each instance comes with the open descriptor that holds its cleanup lock:
// that process inherits the lock, so no planner round or prolog takes the instance between the
// epilog's return and the process's start.
struct HeldCleanup {
  int gpu = 0;
  int gpu_instance_id = 0;
  int lock_fd = -1;
};
class CleanupHandoff {
 public:
  virtual ~CleanupHandoff() = default;
  // Success once the process runs holding every lock; an error leaves the work to the caller.
  virtual Result<void> hand_off(const std::vector<HeldCleanup>& held) = 0;
};

// Who may use a MIG instance. The driver lets a process work on an instance only if it can open
// the instance's GPU-instance and compute-instance capability device files
// (/dev/nvidia-caps/nvidia-cap<N>); CUDA_VISIBLE_DEVICES only chooses among what it can open. The
// prolog grants a job's instances to the job's user, every release path revokes them before the
// scrub (docs/security.md, "Device confinement").
class InstanceAccess {
 public:
  virtual ~InstanceAccess() = default;
  // From now on only `uid` (and root) can open the instance's capability files.
  virtual Result<void> grant(const LedgerInstance& instance, unsigned uid) = 0;
  // A shared instance whose shares several users hold (a partition with share_across_users): from
  // now on exactly `users` (and root) can open it, since each user's MPS server opens it for that
  // user's clients. The first is the owner, as grant() makes one; the others get read access
  // through the files' access ACL. Names, as the ledger's share holders carry them.
  virtual Result<void> grant_users(const LedgerInstance& instance, const std::vector<std::string>& users) = 0;
  // From now on only root can.
  virtual Result<void> revoke(const LedgerInstance& instance) = 0;
  // Every capability of the ledger's GPUs that no job's instance holds becomes root's alone: how
  // a node may look before slurm-vgpu first ran (the driver's defaults). How many files changed.
  virtual Result<int> secure_unheld(const Ledger& ledger) = 0;
  // Why a whole GPU (MIG off) cannot be kept to its job's user on this node, or empty when it can.
  // The planner offers no whole GPU while this says why: Slurm would start jobs whose prolog
  // could not confine them.
  [[nodiscard]] virtual std::string whole_gpus_unconfinable() { return {}; }
};

// The CUDA MPS control daemon of a shared instance (docs/shared-instances.md): one per instance,
// root's, with each share's limits set as the defaults of every server it starts before any client
// connects, so a job can lower its limits but never raise them. Jobs find it through
// CUDA_MPS_PIPE_DIRECTORY.
class MpsControl {
 public:
  virtual ~MpsControl() = default;
  // Starts the daemon of `device_uuid` (the instance's MIG uuid) with `limits` as its defaults and
  // returns the pipe directory its jobs are given. A daemon already running there (a retried
  // prolog) is kept and given the same defaults.
  virtual Result<std::string> open(const std::string& device_uuid, const ShareLimits& limits) = 0;
  // Quits the daemon (its servers, and so its clients, end with it) and removes its directories.
  // Success when nothing is left, also when nothing was there.
  virtual Result<void> close(const std::string& device_uuid) = 0;
  // The devices that have a daemon's directories on this node, running or left by a crash.
  virtual Result<std::vector<std::string>> devices() = 0;
};

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

// Hands the split just written to advertisement.json to slurmctld, the way the controller's

// Hands the split just written to advertisement.json to slurmctld, the way the controller's
// release needs (split_publisher.h).
class SplitPublisher {
 public:
  virtual ~SplitPublisher() = default;
  virtual Result<void> publish(const std::map<std::string, int>& counts) = 0;
};

}  // namespace vgpu
