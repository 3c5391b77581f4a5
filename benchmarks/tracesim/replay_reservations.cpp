#include "replay_reservations.h"

#include <algorithm>

namespace vgpu::bench {

void ReplayReservations::started(const Allocation& a, long long finish) {
  for (const auto& part : a.parts) gpu_finishes_[static_cast<std::size_t>(part.gpu)].insert(finish);
}

void ReplayReservations::ended(const Allocation& a, long long finish) {
  for (const auto& part : a.parts) {
    auto& f = gpu_finishes_[static_cast<std::size_t>(part.gpu)];
    if (auto it = f.find(finish); it != f.end()) f.erase(it);
  }
}

long long ReplayReservations::node_free_at(const Packer& packer, int node, long long now) const {
  long long at = now;
  for (int g = packer.shape().first_gpu(node); g < packer.shape().end_gpu(node); ++g)
    if (const auto& f = gpu_finishes_[static_cast<std::size_t>(g)]; !f.empty()) at = std::max(at, *f.rbegin());
  return at;
}

int ReplayReservations::update(const Packer& packer, long long now,
                               const std::vector<std::pair<std::size_t, int>>& starving) {
  std::vector<WideReservation> next;
  if (!starving.empty()) {
    std::vector<WideRequest> requests;
    for (const auto& [task, gpus] : starving) requests.push_back({std::to_string(task), 1, gpus});
    std::vector<ReservationCandidate> nodes;
    for (int n = 0; n < packer.shape().nodes(); ++n)
      nodes.push_back({std::to_string(n), packer.shape().node(n).gpus,
                       static_cast<int>(std::min<long long>(node_free_at(packer, n, now) - now, 2'000'000'000))});
    next = choose_wide_reservations(requests, nodes, reservations_);
  }
  int gained = 0;
  for (const auto& r : next)
    if (std::ranges::find(reservations_, r.job, &WideReservation::job) == reservations_.end()) ++gained;
  reservations_ = std::move(next);
  start_.clear();
  for (const auto& r : reservations_) start_.push_back(node_free_at(packer, std::stoi(r.nodes.front()), now));
  applied_.assign(reservations_.size(), 2);  // unknown: the next apply_holds sets them
  return gained;
}

bool ReplayReservations::has(std::size_t task) const {
  return std::ranges::find(reservations_, std::to_string(task), &WideReservation::job) != reservations_.end();
}

void ReplayReservations::forget(std::size_t task) {
  auto it = std::ranges::find(reservations_, std::to_string(task), &WideReservation::job);
  if (it == reservations_.end()) return;
  auto i = it - reservations_.begin();
  reservations_.erase(it);
  start_.erase(start_.begin() + i);
  applied_.assign(reservations_.size(), 2);
}

const std::vector<char>& ReplayReservations::hold_for(Packer& packer, long long finish,
                                                      std::optional<std::size_t> holder) {
  std::vector<char> want(reservations_.size(), 0);
  for (std::size_t r = 0; r < reservations_.size(); ++r)
    want[r] = finish > start_[r] && (!holder || reservations_[r].job != std::to_string(*holder));
  if (want == applied_) return applied_;
  applied_ = want;
  std::vector<int> gpus;
  for (std::size_t r = 0; r < reservations_.size(); ++r) {
    if (!want[r]) continue;
    int node = std::stoi(reservations_[r].nodes.front());
    for (int g = packer.shape().first_gpu(node); g < packer.shape().end_gpu(node); ++g) gpus.push_back(g);
  }
  packer.hold(gpus);
  holding_ = !gpus.empty();
  return applied_;
}

void ReplayReservations::lift_holds(Packer& packer) {
  if (holding_) packer.hold({});
  holding_ = false;
  applied_.assign(reservations_.size(), 0);
}

}  // namespace vgpu::bench
