#include "node_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "vgpu/contract/node_features.h"
#include "vgpu/core/catalog.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/ports.h"

namespace vgpu::node {

WantedFeatures wanted_node_features(const NodeGres& node, const Ledger& ledger, const Catalog& base) {
  WantedFeatures want;
  want.in_use = vgpu_in_use_here(node, ledger);
  // Per GPU, the places jobs hold and how many compute slices each takes; keyed by place, so a
  // claimed slot and the instance made for it count once.
  std::optional<Catalog> own;
  if (!ledger.classes.empty()) own.emplace(Catalog::with_classes(base, ledger.classes));
  const Catalog& catalog = own ? *own : base;
  std::map<int, std::map<Placement, int>> held;
  auto hold = [&](int gpu, const std::string& profile, const Placement& where) {
    int slices = 1;  // unknown here (the ledger's own check reports it): held, size unknown
    for (const auto& g : ledger.gpus)
      if (g.index == gpu)
        if (const GpuModel* m = catalog.find_model(g.model))
          if (const Profile* p = m->find_profile(profile)) slices = p->compute_slices;
    held[gpu][where] = slices;
  };
  for (const auto& inst : ledger.instances)
    if (inst.job) hold(inst.gpu, inst.profile, inst.placement);
  for (const auto& group : ledger.share_groups)
    if (!group.holders.empty()) hold(group.gpu, group.type, group.placement);
  for (const auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job) hold(slot.gpu, slot.profile, slot.placement);
  want.no_idle_gpu = !ledger.gpus.empty() && std::ranges::all_of(ledger.gpus, [&](const LedgerGpu& g) {
    return held.contains(g.index);
  });
  want.partly_used_gpu = std::ranges::any_of(ledger.gpus, [&](const LedgerGpu& g) {
    auto it = held.find(g.index);
    const GpuModel* m = catalog.find_model(g.model);
    if (it == held.end() || !m) return false;
    int used = 0;
    for (const auto& [where, slices] : it->second) used += slices;
    return used < m->compute_slices;
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
