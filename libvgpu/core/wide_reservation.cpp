#include "vgpu/core/wide_reservation.h"

#include <algorithm>
#include <numeric>

namespace vgpu {

namespace {

bool enough_gpus(const WideRequest& r, const ReservationCandidate& c) {
  return r.gpus_per_node <= 0 || c.gpus <= 0 || c.gpus >= r.gpus_per_node;
}

}  // namespace

std::vector<WideReservation> choose_wide_reservations(std::span<const WideRequest> requests,
                                                      std::span<const ReservationCandidate> candidates,
                                                      std::span<const WideReservation> previous) {
  std::vector<bool> taken(candidates.size(), false);
  auto index_of = [&](const std::string& node) -> std::ptrdiff_t {
    auto it = std::ranges::find(candidates, node, &ReservationCandidate::node);
    return it == candidates.end() ? -1 : it - candidates.begin();
  };
  // Least busy first; Slurm's order on ties (a stable sort of the candidates as given).
  std::vector<std::size_t> by_busy(candidates.size());
  std::iota(by_busy.begin(), by_busy.end(), std::size_t{0});
  std::ranges::stable_sort(by_busy, {}, [&](std::size_t i) { return candidates[i].busy; });

  std::vector<WideReservation> out;
  for (const auto& r : requests) {
    if (r.nodes <= 0) continue;
    std::vector<std::size_t> chosen;
    auto before = std::ranges::find(previous, r.job, &WideReservation::job);
    if (before != previous.end() && std::ssize(before->nodes) == r.nodes) {
      for (const auto& name : before->nodes) {
        auto i = index_of(name);
        if (i < 0 || taken[static_cast<std::size_t>(i)] || !enough_gpus(r, candidates[static_cast<std::size_t>(i)]) ||
            std::ranges::find(chosen, static_cast<std::size_t>(i)) != chosen.end()) {
          chosen.clear();
          break;
        }
        chosen.push_back(static_cast<std::size_t>(i));
      }
    }
    if (chosen.empty())
      for (std::size_t i : by_busy) {
        if (std::ssize(chosen) == r.nodes) break;
        if (!taken[i] && enough_gpus(r, candidates[i])) chosen.push_back(i);
      }
    if (std::ssize(chosen) < r.nodes) continue;
    WideReservation w{r.job, {}};
    for (std::size_t i : chosen) {
      taken[i] = true;
      w.nodes.push_back(candidates[i].node);
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace vgpu
