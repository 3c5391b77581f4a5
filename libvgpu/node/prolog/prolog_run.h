// One run of the prolog's flow (prolog_flow.cpp), shared by its phases (private to libvgpu/node).
// Each phase either lets the run go on (it returns no Ending) or ends it with the result the
// prolog returns: a job cancelled with a reason, sent back to the queue, or left as it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node_lock.h"
#include "shares/share_prolog.h"
#include "vgpu/core/gres_request.h"
#include "vgpu/node/context.h"
#include "vgpu/node/prolog.h"

namespace vgpu::node::prolog {

using Ending = std::optional<Result<PrologResult>>;

class Run {
 public:
  Run(NodeContext& context, const PrologRequest& request);

  // Cancels the job; `why` is one of contract::kCancelClasses, for the node's metrics.
  Result<PrologResult> reject(std::string_view why, std::string reason);
  // A valid job Slurm started where this node has no room after all (slurmctld's view lagging the
  // node's, as right after a slurmctld restart: docs/design.md) goes back to the queue instead of
  // being cancelled; only a job Slurm will not requeue is cancelled, with both reasons.
  Result<PrologResult> no_room(std::string reason,
                               std::string_view because = "Slurm started it before the node's advertisement caught up");
  PrologEndings endings();

  NodeContext& ctx;
  const PrologRequest& req;
  const std::string where;  // "vgpu: prolog: job 42", the head of its log lines and errors
  PrologResult result;
};

// What the job asked for here and what the run holds while it works.
struct JobWork {
  std::vector<GresRequest> mig;  // MIG instances and shares
  std::vector<GresRequest> viz;  // viz pools
  const PartitionPolicy* part = nullptr;
  Ledger ledger;  // as the latest phase read or wrote it
  std::optional<NodeLock> hardware;
  bool created_any = false;  // an instance was created, not adopted or taken idle
};

// The job's request against its user name, its partition's policy and what it holds already;
// a viz-only job is served here whole.
Ending check_request(Run& run, JobWork& work);
// Claims the job's slots (taking idle instances on them), and frees those where a released
// instance still stands.
Ending claim_slots_for_job(Run& run, JobWork& work);
// Creates the job's instances at its claimed placements and records them in one write.
Ending create_and_record(Run& run, JobWork& work);
// Gives the job's instances to its user alone.
Ending confine_to_user(Run& run, JobWork& work);
// Writes the job record the plugin reads, then starts the job's viz VM.
Result<PrologResult> write_record_and_start_viz(Run& run, JobWork& work);

}  // namespace vgpu::node::prolog
