#include "node_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "vgpu/contract/node_features.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/ports.h"

namespace vgpu::node {

WantedFeatures wanted_node_features(const NodeGres& node, const Ledger& ledger) {
  WantedFeatures want;
  want.in_use = vgpu_in_use_here(node, ledger);
  std::set<int> busy;
  for (const auto& inst : ledger.instances)
    if (inst.job) busy.insert(inst.gpu);
  for (const auto& group : ledger.share_groups)
    if (!group.holders.empty()) busy.insert(group.gpu);
  for (const auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job) busy.insert(slot.gpu);
  want.no_idle_gpu = !ledger.gpus.empty() && std::ranges::all_of(ledger.gpus, [&](const LedgerGpu& g) {
    return busy.contains(g.index);
  });
  return want;
}

void steer_node_features(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes) {
  if (!ctx.policy->planner.node_features || !node.features) return;
  auto ledger = ctx.ledger->load();
  if (!ledger) {
    notes.push_back("node features: ledger unreadable, features left as they are: " + ledger.error().message);
    return;
  }
  const WantedFeatures want = wanted_node_features(node, *ledger);
  auto has = [&](std::string_view f) { return std::ranges::find(*node.features, f) != node.features->end(); };
  // What slurmctld shows, written as the planner writes it: a mere difference of order is no change.
  const std::string now =
      contract::with_planner_features(*node.features, has(contract::kFeatureInUse), has(contract::kFeatureNoIdleGpu));
  const std::string next = contract::with_planner_features(*node.features, want.in_use, want.no_idle_gpu);
  if (next == now) return;
  const std::string why = fmt::format("{}, {}", want.in_use ? "vgpu allocated here" : "no vgpu allocated here",
                                      want.no_idle_gpu ? "no GPU idle" : "a GPU idle");
  auto shown = [](const std::string& f) { return f.empty() ? std::string("(none)") : f; };
  if (auto ok = ctx.slurm->set_node_features(ctx.node, next); !ok)
    notes.push_back(fmt::format("node features: cannot set {} ({}): {}", shown(next), why, ok.error().message));
  else
    notes.push_back(fmt::format("node features {} -> {} ({})", shown(now), shown(next), why));
}

}  // namespace vgpu::node
