#include "vgpu/core/planner.h"

#include <set>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace vgpu {

std::map<std::string, int> Plan::counts() const {
  std::map<std::string, int> out;
  for (const auto& s : slots) ++out[s.profile->name];
  return out;
}

namespace {

bool allowed(const PlannerConfig& config, std::string_view profile) {
  return config.allowed_profiles.empty() ||
         std::ranges::find(config.allowed_profiles, profile) != config.allowed_profiles.end();
}

constexpr std::size_t kNotedDemands = 100;

struct Work {
  std::vector<GpuLayout> layouts;
  std::vector<bool> eligible;
  std::vector<std::string> reserved_for;  // per GPU: "" or the starving profile it drains for
  Plan plan;
  // Profiles that no longer fit anywhere, and starving profiles no GPU can be reserved for. Within
  // a round space is only ever taken and GPUs only ever reserved, so once a profile finds no place
  // (or no GPU to reserve) it finds none for the rest of the round: remembering it makes a round
  // linear in the queue however many units it asks for (2g.20gb:4096 on 50,000 pending lines),
  // and plans exactly what trying every unit would.
  std::set<std::string, std::less<>> full, unreservable;

  // The (gpu, placement) that costs the fewest future options; prefers partly used GPUs, which
  // keeps whole GPUs whole for large profiles. Ties go to the lowest GPU index.
  bool remember = true;  // PlannerConfig::try_every_unit turns it off

  bool place_one(std::string_view profile_name, int demand_index) {
    if (remember && full.contains(profile_name)) return false;
    int best_gpu = -1;
    Placement best_placement;
    long best_loss = std::numeric_limits<long>::max();
    for (std::size_t g = 0; g < layouts.size(); ++g) {
      if (!eligible[g]) continue;
      if (!reserved_for[g].empty() && reserved_for[g] != profile_name) continue;
      const Profile* profile = layouts[g].model().find_profile(profile_name);
      if (!profile) continue;
      auto where = layouts[g].best_placement(*profile);
      if (!where) continue;
      GpuLayout trial = layouts[g];
      (void)trial.place(*profile, *where);
      long loss = layouts[g].options_score() - trial.options_score();
      if (loss < best_loss) {
        best_loss = loss;
        best_gpu = static_cast<int>(g);
        best_placement = *where;
      }
    }
    if (best_gpu < 0) {
      full.emplace(profile_name);
      return false;
    }
    auto& layout = layouts[static_cast<std::size_t>(best_gpu)];
    const Profile* profile = layout.model().find_profile(profile_name);
    (void)layout.place(*profile, best_placement);
    plan.slots.push_back(
        {best_gpu, profile, best_placement, fmt::format("demand #{}", demand_index + 1), demand_index});
    return true;
  }

  // Picks the GPU that will host a starving profile soonest: one that supports it and where the
  // fewest existing instances stand in the way of one of its placements.
  void reserve_for(std::string_view profile_name) {
    if (remember && unreservable.contains(profile_name)) return;
    int best_gpu = -1;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (std::size_t g = 0; g < layouts.size(); ++g) {
      if (!eligible[g] || !reserved_for[g].empty()) continue;
      const Profile* profile = layouts[g].model().find_profile(profile_name);
      if (!profile) continue;
      for (const auto& p : profile->placements) {
        std::size_t blockers = static_cast<std::size_t>(std::ranges::count_if(
            layouts[g].instances(), [&](const PlacedInstance& i) { return (i.placement.mask() & p.mask()) != 0; }));
        if (blockers < fewest) {
          fewest = blockers;
          best_gpu = static_cast<int>(g);
        }
      }
    }
    if (best_gpu < 0) {
      plan.notes.push_back(fmt::format("starving {}: no eligible GPU supports it", profile_name));
      unreservable.emplace(profile_name);
      return;
    }
    reserved_for[static_cast<std::size_t>(best_gpu)] = std::string(profile_name);
    plan.reserved_gpus.push_back(best_gpu);
    plan.notes.push_back(
        fmt::format("starving {}: GPU {} reserved; nothing new is advertised there until it fits ({} "
                    "instance(s) must finish)",
                    profile_name, best_gpu, fewest));
  }
};

}  // namespace

Plan plan_node(std::span<const PlannerGpu> gpus, const PlannerConfig& config, std::span<const Demand> demand) {
  Work w;
  w.remember = !config.try_every_unit;
  for (const auto& g : gpus) {
    w.layouts.push_back(g.occupied);
    w.eligible.push_back(g.eligible);
    w.reserved_for.emplace_back();
  }

  // Starving demand goes first: it has waited longest, and reserving early is what lets a GPU drain.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < demand.size(); ++i)
    if (demand[i].starving) order.push_back(i);
  for (std::size_t i = 0; i < demand.size(); ++i)
    if (!demand[i].starving) order.push_back(i);

  std::size_t noted = 0;
  int unnoted_placed = 0;
  for (std::size_t i : order) {
    const Demand& d = demand[i];
    if (!allowed(config, d.profile)) {
      if (++noted <= kNotedDemands)
        w.plan.notes.push_back(fmt::format("demand #{} {}: not allowed by the policy, ignored", i + 1, d.profile));
      continue;
    }
    int placed = 0;
    for (int n = 0; n < d.count; ++n) {
      if (w.place_one(d.profile, static_cast<int>(i))) ++placed;
      else if (w.remember)
        break;
    }
    // A line per demand for the first kNotedDemands; a long queue's rest is summed up once below
    // (tens of thousands of lines nobody reads cost a long queue's round a quarter of its time).
    if (++noted <= kNotedDemands)
      w.plan.notes.push_back(fmt::format("demand #{} {} x{}: {} planned", i + 1, d.profile, d.count, placed));
    else
      unnoted_placed += placed;
    if (placed < d.count && d.starving) w.reserve_for(d.profile);
  }

  if (noted > kNotedDemands)
    w.plan.notes.push_back(fmt::format("{} more demand(s): {} planned", noted - kNotedDemands, unnoted_placed));
  for (std::size_t g = 0; g < w.layouts.size(); ++g) {
    if (!w.eligible[g] || !w.reserved_for[g].empty()) continue;
    std::vector<std::string_view> idle(config.idle_layout.begin(), config.idle_layout.end());
    // A GPU with MIG off can be only itself: that is its idle layout, whatever the partition's says.
    if (const Profile* whole = w.layouts[g].model().whole_gpu_profile(); whole && w.layouts[g].mode() == GpuMode::whole)
      idle.assign(1, whole->name);
    for (const auto name : idle) {
      if (!allowed(config, name)) continue;
      const Profile* profile = w.layouts[g].model().find_profile(name);
      if (!profile) continue;
      if (auto where = w.layouts[g].best_placement(*profile)) {
        (void)w.layouts[g].place(*profile, *where);
        w.plan.slots.push_back({static_cast<int>(g), profile, *where, "idle layout", -1});
      }
    }
  }
  return w.plan;
}

Result<void> verify_jointly_placeable(std::span<const PlannerGpu> gpus, const Plan& plan) {
  std::vector<GpuLayout> layouts;
  for (const auto& g : gpus) layouts.push_back(g.occupied);
  for (const auto& slot : plan.slots) {
    if (slot.gpu < 0 || static_cast<std::size_t>(slot.gpu) >= layouts.size())
      return fail(ErrorCode::invalid_argument, fmt::format("slot on GPU {}: no such GPU", slot.gpu));
    if (auto r = layouts[static_cast<std::size_t>(slot.gpu)].place(*slot.profile, slot.placement); !r)
      return std::unexpected(
          r.error().within(fmt::format("GPU {}: {}@{}", slot.gpu, slot.profile->name, slot.placement.start)));
  }
  return {};
}

}  // namespace vgpu
