// The Epilog's flow (vgpu-epilog): end the job's tenancy, scrub and destroy its instances, stop its
// viz VM. Released instances are a work queue any epilog or planner round finishes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "vgpu/node/context.h"

namespace vgpu {

struct EpilogResult {
  int destroyed = 0;
  int quarantined = 0;
  int kept = 0;        // scrubbed and kept idle at their slot for the next job
  int handed_off = 0;  // left released for the cleanup process (ports.h, CleanupHandoff) to finish
  std::vector<std::string> problems;
};
// Ends the job's tenancy, scrubs and destroys its instances; safe to run any number of times.
Result<EpilogResult> run_epilog(NodeContext& ctx, JobId job, const std::string& end_reason);
// Which released instances (no job; scrubbing or destroying) a pass works. Each has its own cleanup
// lock (node_lock.h), so passes over different instances run at the same time.
struct ReleasePass {
  // Instances (GPU, GPU-instance id) whose cleanup locks the caller holds (an epilog: its job's,
  // locked before they were released). Every other released instance is worked if its lock is free.
  std::vector<std::pair<int, int>> held;
  // Also wait for released instances another process is working on, then finish what it left (a
  // prolog whose claimed slot one of them stands on). Never in the planner, which must not wait.
  bool wait_for_others = false;
};
// Scrubs and destroys the released instances `pass` names (work a crashed epilog left behind
// included); the epilog, a prolog on a released slot and each planner round call it.
Result<EpilogResult> finish_released_instances(NodeContext& ctx, const ReleasePass& pass = {});
// The cleanup process's side of an epilog's hand-off (ports.h, CleanupHandoff): finishes the
// instances whose cleanup locks it inherited on `held[i].lock_fd` (a descriptor that does not hold
// its instance's lock is reported and that instance worked like any other), then every other
// released instance whose lock is free.
Result<EpilogResult> finish_handed_off_instances(NodeContext& ctx, const std::vector<HeldCleanup>& held);
// Stops the job's VM (if any) and drops its ledger record; problems are reported.
void stop_viz_session(NodeContext& ctx, JobId job, std::vector<std::string>& problems);

}  // namespace vgpu
