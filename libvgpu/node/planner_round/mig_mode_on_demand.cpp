#include "vgpu/node/mig_mode_on_demand.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>

namespace vgpu {
namespace {

// One GPU as this choice sees it: what it holds, what the choice has put on it, and how it ends up.
struct Seat {
  const OnDemandGpu* gpu;
  GpuLayout layout;     // held, plus the MIG units this choice placed
  bool mig_on;          // the mode it ends up in
  bool taken = false;   // a whole-GPU unit of this choice has it
  bool placed = false;  // a MIG unit of this choice is on it
};

bool free_now(const Seat& s) { return s.layout.empty() && !s.taken && !s.placed; }

// Whether `profile` is the whole GPU on this seat's model.
bool offers_whole(const Seat& s, const std::string& profile) {
  const Profile* p = s.layout.model().find_profile(profile);
  return p && p->whole_gpu;
}

// `preferred` first (last round's choice), then by index: the same demand picks the same GPUs.
Seat* first_of(std::vector<Seat>& seats, const std::set<int>& preferred, auto&& fits) {
  Seat* best = nullptr;
  for (auto& s : seats) {
    if (!fits(s)) continue;
    if (!best || (preferred.contains(s.gpu->index) && !preferred.contains(best->gpu->index))) best = &s;
  }
  return best;
}

// A whole-GPU unit: a GPU with MIG off that nobody holds, else one in MIG mode that nobody holds,
// else (starving demand only) the MIG GPU that holds the least, which then drains.
bool seat_whole(std::vector<Seat>& seats, const std::string& profile, bool starving, const MigModeTargets& before,
                MigModeTargets& out) {
  if (Seat* s =
          first_of(seats, {}, [&](const Seat& x) { return offers_whole(x, profile) && !x.mig_on && free_now(x); })) {
    s->taken = true;
    return true;
  }
  const auto switchable = [&](const Seat& x) { return offers_whole(x, profile) && x.mig_on && x.gpu->switchable; };
  Seat* s = first_of(seats, before.whole, [&](const Seat& x) { return switchable(x) && free_now(x); });
  if (!s && starving) {
    // The least held, last round's choice among equals, then the lowest index.
    const auto rank = [&](const Seat& x) {
      return std::tuple(x.layout.used_compute_slices(), !before.whole.contains(x.gpu->index), x.gpu->index);
    };
    for (auto& x : seats)
      if (switchable(x) && !x.taken && !x.placed && (!s || rank(x) < rank(*s))) s = &x;
    if (s)
      out.notes.push_back(
          fmt::format("GPU {}: drains for starving {} demand (mig_mode on_demand): no new MIG job "
                      "there, MIG off once its {} held instance(s) are given back",
                      s->gpu->index, profile, s->layout.instances().size()));
  }
  if (!s) return false;
  s->taken = true;
  s->mig_on = false;
  out.whole.insert(s->gpu->index);
  return true;
}

// Several whole GPUs for one job, where the node says how its GPUs are linked: a set of one NVLink
// domain if one can be had (choose_whole_gpus), among the GPUs free with MIG off and the empty
// switchable ones in MIG mode, which then leave it. False when fewer are free: the units are then
// seated one by one.
bool seat_whole_group(std::vector<Seat>& seats, const std::string& profile, int count, const GpuLinks& links,
                      MigModeTargets& out) {
  std::vector<int> free;
  for (const auto& s : seats)
    if (offers_whole(s, profile) && free_now(s) && (!s.mig_on || s.gpu->switchable)) free.push_back(s.gpu->index);
  std::ranges::sort(free);
  auto choice = choose_whole_gpus(links, free, count);
  if (!choice) return false;
  for (auto& s : seats) {
    if (std::ranges::find(choice->gpus, s.gpu->index) == choice->gpus.end()) continue;
    s.taken = true;
    if (!s.mig_on) continue;
    s.mig_on = false;
    out.whole.insert(s.gpu->index);
  }
  return true;
}

// A MIG instance: on a GPU in MIG mode that already has something (packing keeps empty GPUs for
// whole-GPU units), then on an empty one, then on a free GPU with MIG off, which enters MIG mode.
bool seat_instance(std::vector<Seat>& seats, const std::string& profile, const MigModeTargets& before,
                   MigModeTargets& out) {
  const auto try_place = [&](Seat& s) {
    const Profile* p = s.layout.model().find_profile(profile);
    if (!p || p->whole_gpu) return false;
    auto at = s.layout.best_placement(*p);
    if (!at || !s.layout.place(*p, *at)) return false;
    s.placed = true;
    return true;
  };
  for (bool want_empty : {false, true})
    for (auto& s : seats)
      if (s.mig_on && !s.taken && s.layout.empty() == want_empty && try_place(s)) return true;
  Seat* s = first_of(seats, before.partitioned, [&](const Seat& x) {
    const Profile* p = x.layout.model().find_profile(profile);
    return p && !p->whole_gpu && !x.mig_on && x.gpu->switchable && free_now(x);
  });
  if (!s) return false;
  s->layout = GpuLayout(s->layout.model(), GpuMode::partitioned);
  s->mig_on = true;
  out.partitioned.insert(s->gpu->index);
  return try_place(*s);
}

// Instances a demand entry needs: a share type's units are shares, several to an instance.
int instances_of(std::span<const Seat> seats, const Demand& d) {
  for (const auto& s : seats)
    if (const Profile* p = s.layout.model().find_profile(d.profile); p && p->shares > 0)
      return (d.count + p->shares - 1) / p->shares;
  return d.count;
}

bool names_whole(std::span<const Seat> seats, const std::string& profile) {
  return std::ranges::any_of(seats, [&](const Seat& s) { return offers_whole(s, profile); });
}

}  // namespace

MigModeTargets choose_mig_modes_on_demand(std::span<const OnDemandGpu> gpus, std::span<const Demand> demand,
                                          const MigModeTargets& before, bool whole_offered,
                                          const std::optional<GpuLinks>& links) {
  MigModeTargets out;
  if (std::ranges::none_of(gpus, &OnDemandGpu::switchable)) return out;
  std::vector<Seat> seats;
  for (const auto& g : gpus) seats.push_back({&g, g.held, g.mig_on});
  for (const auto& d : demand) {
    const bool whole = names_whole(seats, d.profile);
    if (whole && !whole_offered) continue;
    if (whole && d.count > 1 && links && seat_whole_group(seats, d.profile, d.count, *links, out)) continue;
    // A unit that finds no seat is followed by none of the same kind: the ones after it would not
    // fit either, and a large count (an array) costs nothing.
    for (int n = whole ? d.count : instances_of(seats, d); n > 0; --n)
      if (!(whole ? seat_whole(seats, d.profile, d.starving, before, out)
                  : seat_instance(seats, d.profile, before, out)))
        break;
  }
  return out;
}

}  // namespace vgpu
