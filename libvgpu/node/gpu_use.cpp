#include "gpu_use.h"

#include <map>
#include <optional>

namespace vgpu::node {

std::vector<GpuUse> gpu_use(const Ledger& ledger, const Catalog& base) {
  std::optional<Catalog> own;
  if (!ledger.classes.empty()) own.emplace(Catalog::with_classes(base, ledger.classes));
  const Catalog& catalog = own ? *own : base;
  std::map<int, const GpuModel*> models;
  for (const auto& g : ledger.gpus) models[g.index] = catalog.find_model(g.model);
  auto profile = [&](int gpu, const std::string& name) -> const Profile* {
    auto it = models.find(gpu);
    return it == models.end() || !it->second ? nullptr : it->second->find_profile(name);
  };
  std::map<int, std::map<Placement, int>> held;  // GPU -> place -> its compute slices
  std::map<int, double> share_room;
  auto hold = [&](int gpu, const std::string& name, const Placement& where) {
    const Profile* p = profile(gpu, name);
    held[gpu][where] = p ? p->compute_slices : 1;
  };
  for (const auto& inst : ledger.instances)
    if (inst.job) hold(inst.gpu, inst.profile, inst.placement);
  for (const auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job) hold(slot.gpu, slot.profile, slot.placement);
  for (const auto& group : ledger.share_groups) {
    if (group.holders.empty()) continue;
    hold(group.gpu, group.type, group.placement);
    const Profile* p = profile(group.gpu, group.type);
    const GpuModel* m = models[group.gpu];
    if (p && m && p->shares > 0 && m->compute_slices > 0 && std::ssize(group.holders) < p->shares)
      share_room[group.gpu] += static_cast<double>(p->shares - std::ssize(group.holders)) / p->shares *
                               p->compute_slices / m->compute_slices;
  }
  std::vector<GpuUse> out;
  for (const auto& g : ledger.gpus) {
    GpuUse u;
    u.index = g.index;
    u.compute_slices = models[g.index] ? models[g.index]->compute_slices : 0;
    if (auto it = held.find(g.index); it != held.end()) {
      u.held = true;
      for (const auto& [where, slices] : it->second) u.held_slices += slices;
    }
    u.share_room = share_room[g.index];
    out.push_back(u);
  }
  return out;
}

double free_gpus(const std::vector<GpuUse>& use) {
  double free = 0;
  for (const auto& u : use) {
    if (u.compute_slices <= 0) continue;
    const int left = u.compute_slices - u.held_slices;
    free += (left > 0 ? static_cast<double>(left) / u.compute_slices : 0.0) + u.share_room;
  }
  return free;
}

}  // namespace vgpu::node
