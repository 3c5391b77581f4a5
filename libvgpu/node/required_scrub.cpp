// The one wording of "this node cannot scrub what a partition requires", for the planner's round
// notes and verify_node alike.
#include <fmt/format.h>

#include "vgpu/node/node_state.h"

namespace vgpu {

std::vector<std::string> required_scrub_problems(const NodeContext& ctx) {
  std::vector<std::string> problems;
  if (!ctx.scrubber) return problems;
  const std::string why = ctx.scrubber->unavailable_reason();
  if (why.empty()) return problems;
  for (const PartitionPolicy* p : node_partitions(*ctx.policy, ctx.node))
    if (p->scrub == ScrubMode::required)
      problems.push_back(
          fmt::format("scrub: partition {} requires it, but {}: every instance its jobs "
                      "release is quarantined (docs/scrub.md)",
                      p->name, why));
  return problems;
}

}  // namespace vgpu
