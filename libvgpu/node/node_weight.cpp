#include "node_weight.h"

#include <fmt/format.h>


#include "vgpu/node/node_state.h"
#include "vgpu/node/ports.h"

namespace vgpu::node {

std::uint32_t wanted_node_weight(const PlannerKnobs::NodeWeights& weights, bool vgpu_in_use) {
  return static_cast<std::uint32_t>(vgpu_in_use ? weights.in_use : weights.idle);
}

void steer_node_weight(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes) {
  const auto& weights = ctx.policy->planner.node_weights;
  if (!weights || !node.weight) return;
  auto ledger = ctx.ledger->load();
  if (!ledger) {
    notes.push_back("node weight: ledger unreadable, weight left as it is: " + ledger.error().message);
    return;
  }
  const std::uint32_t want = wanted_node_weight(*weights, vgpu_in_use_here(node, *ledger));
  if (*node.weight == want) return;
  const char* why = want == static_cast<std::uint32_t>(weights->in_use) ? "vgpu allocated here" : "no vgpu allocated here";
  if (auto ok = ctx.slurm->set_node_weight(ctx.node, want); !ok)
    notes.push_back(fmt::format("node weight: cannot set {} ({}): {}", want, why, ok.error().message));
  else
    notes.push_back(fmt::format("node weight {} -> {} ({})", *node.weight, want, why));
}

}  // namespace vgpu::node
