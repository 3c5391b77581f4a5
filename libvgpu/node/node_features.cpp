#include "node_features.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpu_use.h"
#include "vgpu/contract/node_features.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/ports.h"

namespace vgpu::node {

WantedFeatures wanted_node_features(const NodeGres& node, const Ledger& ledger, const Catalog& base) {
  WantedFeatures want;
  want.in_use = vgpu_in_use_here(node, ledger);
  const std::vector<GpuUse> use = gpu_use(ledger, base);
  want.no_idle_gpu = !use.empty() && std::ranges::all_of(use, [](const GpuUse& u) { return u.held; });
  want.partly_used_gpu = std::ranges::any_of(
      use, [](const GpuUse& u) { return u.held && u.compute_slices > 0 && u.held_slices < u.compute_slices; });
  return want;
}

void steer_node_features(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes) {
  if (!ctx.policy->planner.node_features || !node.features) return;
  auto ledger = ctx.ledger->load();
  if (!ledger) {
    notes.push_back("node features: ledger unreadable, features left as they are: " + ledger.error().message);
    return;
  }
  const WantedFeatures want = wanted_node_features(node, *ledger, Catalog::builtin());
  // What slurmctld shows, written as the planner writes it: a mere difference of order is no change.
  const std::string now =
      contract::with_planner_features(*node.features, contract::planner_features_in(*node.features));
  const std::string next = contract::with_planner_features(*node.features, want);
  if (next == now) return;
  const std::string why = fmt::format("{}, {}, {}", want.in_use ? "vgpu allocated here" : "no vgpu allocated here",
                                      want.no_idle_gpu ? "no GPU idle" : "a GPU idle",
                                      want.partly_used_gpu ? "a GPU partly used" : "no GPU partly used");
  auto shown = [](const std::string& f) { return f.empty() ? std::string("(none)") : f; };
  if (auto ok = ctx.slurm->set_node_features(ctx.node, next); !ok)
    notes.push_back(fmt::format("node features: cannot set {} ({}): {}", shown(next), why, ok.error().message));
  else
    notes.push_back(fmt::format("node features {} -> {} ({})", shown(now), shown(next), why));
}

}  // namespace vgpu::node
