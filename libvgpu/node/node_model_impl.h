#pragma once
#include <fmt/format.h>

namespace vgpu::node {

template <class Pred>
Result<std::vector<GpuLayout>> layouts_of(const Ledger& ledger, Pred include_slot) {
  std::vector<GpuLayout> layouts;
  for (const auto& g : ledger.gpus) {
    auto m = model_of(ledger, g.index);
    if (!m) return std::unexpected(m.error());
    layouts.emplace_back(**m);
  }
  auto index_of = [&](int gpu) -> std::size_t {
    for (std::size_t i = 0; i < ledger.gpus.size(); ++i)
      if (ledger.gpus[i].index == gpu) return i;
    return ledger.gpus.size();
  };
  auto place = [&](int gpu, const std::string& profile, Placement pl, std::string_view what) -> Result<void> {
    std::size_t i = index_of(gpu);
    if (i == ledger.gpus.size()) return fail(ErrorCode::corrupt, fmt::format("{} on unknown GPU {}", what, gpu));
    const Profile* p = layouts[i].model().find_profile(profile);
    if (!p) return fail(ErrorCode::corrupt, fmt::format("{}: unknown profile {}", what, profile));
    layouts[i].take_mode_of(*p);
    return within(layouts[i].place(*p, pl), fmt::format("{} {}@{} on GPU {}", what, profile, pl.start, gpu));
  };
  // A backed slot and its released instance are one space (slot_backings): placed once, as the
  // slot when the slot is included, else as the instance.
  std::vector<bool> placed_as_slot(ledger.instances.size(), false);
  const auto backing = slot_backings(ledger);
  for (std::size_t s = 0; s < ledger.plan.slots.size(); ++s)
    if (backing[s] && include_slot(ledger.plan.slots[s])) placed_as_slot[*backing[s]] = true;
  for (std::size_t i = 0; i < ledger.instances.size(); ++i) {
    const auto& inst = ledger.instances[i];
    if (placed_as_slot[i]) continue;
    if (auto ok = place(inst.gpu, inst.profile, inst.placement, "instance"); !ok) return std::unexpected(ok.error());
  }
  for (const auto& slot : ledger.plan.slots)
    if (include_slot(slot))
      if (auto ok = place(slot.gpu, slot.profile, slot.placement, "plan slot"); !ok) return std::unexpected(ok.error());
  return layouts;
}

}  // namespace vgpu::node
