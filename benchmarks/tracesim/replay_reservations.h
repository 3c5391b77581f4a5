// The replay's reservations for starving wide tasks, as production makes them: the demand
// publisher picks the nodes (vgpu/core/wide_reservation.h, the node whose running work ends first)
// and books a Slurm reservation of the whole node starting when that work ends. Slurm then lets a
// task start on a reserved node only if it ends before the reservation starts (backfill); the wide
// task starts there then, or earlier anywhere it fits (FLEX). Never a drain: nothing running is
// touched.
//
// Durations here are the tasks' real run times; Slurm would know only their time limits, which are
// longer, so this is the best case for every policy alike.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "packer.h"
#include "vgpu/core/wide_reservation.h"

namespace vgpu::bench {

class ReplayReservations {
 public:
  explicit ReplayReservations(const ClusterShape& shape) : gpu_finishes_(static_cast<std::size_t>(shape.gpus())) {}

  // What runs where, kept up to date by the replay.
  void started(const Allocation& a, long long finish);
  void ended(const Allocation& a, long long finish);

  // Re-chooses the reservations at `now` for the starving wide tasks (task index, GPUs needed), in
  // arrival order; keeps earlier choices that still hold. Returns how many tasks gained one.
  int update(const Packer& packer, long long now, const std::vector<std::pair<std::size_t, int>>& starving);

  [[nodiscard]] bool has(std::size_t task) const;
  // Holds before placing a task that would end at `finish`: every reserved node whose reservation
  // starts before then (Slurm's backfill around a reservation). `holder`: the task is that
  // reservation's own, free to use its node or any other it fits now (production books FLEX
  // reservations). Returns the holds in force (one flag per reservation): a task refused under
  // one set of holds may fit under another.
  const std::vector<char>& hold_for(Packer& packer, long long finish, std::optional<std::size_t> holder = std::nullopt);
  void forget(std::size_t task);
  void lift_holds(Packer& packer);

 private:
  [[nodiscard]] long long node_free_at(const Packer& packer, int node, long long now) const;

  std::vector<std::multiset<long long>> gpu_finishes_;
  std::vector<WideReservation> reservations_;  // job = task index, nodes = node index, as text
  std::vector<long long> start_;               // when each reserved node is free
  std::vector<char> applied_;                  // the holds in force, per reservation (2: unknown)
  bool holding_ = false;                       // some GPU is held in the packer now
};

}  // namespace vgpu::bench
