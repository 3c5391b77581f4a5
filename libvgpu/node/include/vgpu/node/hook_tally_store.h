// The node's hook tally (contract/hook_tally.h) on disk: each prolog and epilog adds its run, the
// planner reads it for the metrics. Metrics only: a tally that cannot be written costs the hook
// nothing but a log line, and a corrupt one is started afresh. The planner keeps the runs of the
// hooks it serves in a PendingTally and adds them once per round: a new file per hook was a good
// part of what a served job cost it (docs/benchmarks.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/contract/hook_tally.h"
#include "vgpu/node/context.h"

namespace vgpu {

struct HookRun {
  std::string_view hook;  // "prolog" or "epilog"
  double seconds = 0;
  std::string_view cancel_class;  // a prolog that cancelled its job: why (contract::kCancelClasses)
  bool requeued = false;          // a prolog that put its job back in the queue
};

struct ScrubRun {
  double seconds = 0;
  std::string_view outcome;  // contract::kScrubOutcomes
};

// Runs not yet in the file, with their strings owned.
class PendingTally {
 public:
  void add(const HookRun& run);
  void add(const std::vector<ScrubRun>& scrubs);
  [[nodiscard]] bool empty() const { return hooks_.empty() && scrubs_.empty(); }
  // Adds every pending run to `tally`, and forgets them.
  void move_into(contract::HookTally& tally);

 private:
  struct Hook {
    std::string hook;
    double seconds;
    std::string cancel_class;
    bool requeued;
  };
  struct Scrub {
    double seconds;
    std::string outcome;
  };
  std::vector<Hook> hooks_;
  std::vector<Scrub> scrubs_;
};

// Adds `run` under <node dir>/hook-tally.lock (a few hundred microseconds), or to
// ctx.pending_tally when the context has one. The error, if any, is for the log; a corrupt file is
// replaced by a tally of this run alone and reported as such.
Result<void> tally_hook_run(const NodeContext& ctx, const HookRun& run);
// Adds the scrubs one pass over the released instances ran, the same way.
Result<void> tally_scrubs(const NodeContext& ctx, const std::vector<ScrubRun>& scrubs);
// Writes what `pending` holds to the file in one write (nothing when it is empty); the runs are
// gone from `pending` whether or not the write worked (metrics only: never an unbounded queue).
Result<void> flush_hook_tally(const NodeContext& ctx, PendingTally& pending);

// The tally as it is; a missing file is an empty tally.
Result<contract::HookTally> read_hook_tally(const NodeContext& ctx);

}  // namespace vgpu
