// The Epilog's flow (vgpu-epilog): end the job's tenancy, scrub and destroy its instances, stop its
// viz VM. Released instances are a work queue any epilog or planner round finishes.
#pragma once

#include <string>
#include <vector>

#include "vgpu/node/context.h"

namespace vgpu {

struct EpilogResult {
  int destroyed = 0;
  int quarantined = 0;
  int kept = 0;  // scrubbed and kept idle at their slot for the next job
  std::vector<std::string> problems;
};
// Ends the job's tenancy, scrubs and destroys its instances; safe to run any number of times.
Result<EpilogResult> run_epilog(NodeContext& ctx, JobId job, const std::string& end_reason);
// Scrubs and destroys every ownerless instance in scrubbing/destroying (work a crashed epilog
// left behind); the epilog and each planner round call it.
Result<EpilogResult> finish_released_instances(NodeContext& ctx);
// Stops the job's VM (if any) and drops its ledger record; problems are reported.
void stop_viz_session(NodeContext& ctx, JobId job, std::vector<std::string>& problems);

}  // namespace vgpu
