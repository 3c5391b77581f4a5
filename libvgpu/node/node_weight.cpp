#include "node_weight.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpu_use.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/ports.h"

namespace vgpu::node {

std::uint32_t wanted_node_weight(const PlannerKnobs::NodeWeights& weights, bool vgpu_in_use, double free_gpus) {
  if (weights.by_free_capacity()) {
    // The parser bounds base + kMaxGpusPerNode x per_free_gpu; a node with more GPUs stays at the top.
    const double w = weights.base + std::round(weights.per_free_gpu * std::max(0.0, free_gpus));
    return static_cast<std::uint32_t>(std::min(w, 2147483647.0));
  }
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
  const bool in_use = vgpu_in_use_here(node, *ledger);
  const double free = free_gpus(gpu_use(*ledger, Catalog::builtin()));
  const std::uint32_t want = wanted_node_weight(*weights, in_use, free);
  if (*node.weight == want) return;
  const std::string why = weights->by_free_capacity() ? fmt::format("{:.2f} GPU(s) free", free)
                          : in_use                    ? "vgpu allocated here"
                                                      : "no vgpu allocated here";
  if (auto ok = ctx.slurm->set_node_weight(ctx.node, want); !ok)
    notes.push_back(fmt::format("node weight: cannot set {} ({}): {}", want, why, ok.error().message));
  else
    notes.push_back(fmt::format("node weight {} -> {} ({})", *node.weight, want, why));
}

}  // namespace vgpu::node
