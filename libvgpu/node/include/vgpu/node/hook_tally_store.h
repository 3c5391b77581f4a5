// The node's hook tally (contract/hook_tally.h) on disk: each prolog and epilog adds its run, the
// planner reads it for the metrics. Metrics only: a tally that cannot be written costs the hook
// nothing but a log line, and a corrupt one is started afresh.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/contract/hook_tally.h"
#include "vgpu/node/context.h"

namespace vgpu {

struct HookRun {
  std::string_view hook;          // "prolog" or "epilog"
  double seconds = 0;
  std::string_view cancel_class;  // a prolog that cancelled its job: why (contract::kCancelClasses)
  bool requeued = false;          // a prolog that put its job back in the queue
};

struct ScrubRun {
  double seconds = 0;
  std::string_view outcome;  // contract::kScrubOutcomes
};

// Adds `run` under <node dir>/hook-tally.lock (a few hundred microseconds). The error, if any, is
// for the log; a corrupt file is replaced by a tally of this run alone and reported as such.
Result<void> tally_hook_run(const NodeContext& ctx, const HookRun& run);
// Adds the scrubs one pass over the released instances ran, the same way.
Result<void> tally_scrubs(const NodeContext& ctx, const std::vector<ScrubRun>& scrubs);

// The tally as it is; a missing file is an empty tally.
Result<contract::HookTally> read_hook_tally(const NodeContext& ctx);

}  // namespace vgpu
