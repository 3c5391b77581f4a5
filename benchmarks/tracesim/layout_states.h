// Memoised answers of vgpu::GpuLayout for every distinct single-GPU occupancy the simulator meets.
// A GPU's future depends only on which profile sits at which start, and an H100 has a few hundred
// such layouts, so each question (best_placement, first_fit_placement, options_score, release) is
// asked of the real GpuLayout once per layout and then looked up: the simulated decisions are the
// plugin's decisions, at table-lookup speed over thousands of GPUs.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "vgpu/core/gpu_layout.h"

namespace vgpu::bench {

using StateId = int;

struct PlacementChoice {
  bool ok = false;    // the profile fits this layout
  Placement where;    // chosen placement
  long loss = 0;      // options_score() before minus after: what plan_node minimises
  StateId next = -1;  // layout after placing
};

class LayoutStates {
 public:
  explicit LayoutStates(const GpuModel& model);

  [[nodiscard]] const GpuModel& model() const { return *model_; }
  [[nodiscard]] static StateId empty() { return 0; }
  [[nodiscard]] std::size_t size() const { return states_.size(); }
  [[nodiscard]] const GpuLayout& layout(StateId s) const { return states_[idx(s)].layout; }
  [[nodiscard]] int used_compute(StateId s) const { return states_[idx(s)].layout.used_compute_slices(); }
  [[nodiscard]] int profile_index(const Profile& p) const;

  // GpuLayout::best_placement, with the planner's loss for it.
  const PlacementChoice& best(StateId s, int profile_index);
  // GpuLayout::first_fit_placement.
  const PlacementChoice& first_fit(StateId s, int profile_index);
  // The layout after releasing the instance that starts at `start`.
  StateId release(StateId s, Placement where);

 private:
  struct State {
    GpuLayout layout;
    long options = 0;
    std::vector<std::optional<PlacementChoice>> best;
    std::vector<std::optional<PlacementChoice>> first;
  };
  static std::size_t idx(StateId s) { return static_cast<std::size_t>(s); }
  std::uint64_t key(const GpuLayout& layout) const;
  StateId intern(const GpuLayout& layout);
  PlacementChoice choose(StateId s, int profile_index, std::optional<Placement> where);

  const GpuModel* model_;
  std::vector<State> states_;
  std::unordered_map<std::uint64_t, StateId> ids_;
};

}  // namespace vgpu::bench
