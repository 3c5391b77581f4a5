// Occupancy of one partitionable GPU and the rules for what may be placed on it: memory-slice ranges
// may not overlap, compute slices may not exceed the model's total, each profile has an instance
// cap, on a uniform model (AMD compute partitions) every instance has the same profile, and the
// GPU's MIG mode decides between MIG profiles (on) and the whole GPU (off).
// Pure value type: the planner copies layouts freely to try alternatives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/catalog.h"

namespace vgpu {

struct PlacedInstance {
  const Profile* profile = nullptr;
  Placement placement;
  bool operator==(const PlacedInstance& o) const { return profile == o.profile && placement == o.placement; }
};

// What a GPU of a MIG model serves now: MIG instances (MIG mode on) or itself, whole (MIG off).
enum class GpuMode { partitioned, whole };
std::string_view to_string(GpuMode mode);

class GpuLayout {
 public:
  explicit GpuLayout(const GpuModel& model, GpuMode mode = GpuMode::partitioned) : model_(&model), mode_(mode) {}

  [[nodiscard]] const GpuModel& model() const { return *model_; }
  [[nodiscard]] GpuMode mode() const { return mode_; }
  // The mode the hardware reports. Instances already placed stay: the caller reconciles them.
  void set_mode(GpuMode mode) { mode_ = mode; }
  // What a GPU holds says its mode where nothing else records it (a ledger): an empty layout takes
  // the mode `profile` needs, whole for the whole GPU, partitioned for anything else.
  void take_mode_of(const Profile& profile) {
    if (empty()) mode_ = profile.whole_gpu ? GpuMode::whole : GpuMode::partitioned;
  }
  [[nodiscard]] const std::vector<PlacedInstance>& instances() const { return instances_; }
  [[nodiscard]] std::uint32_t used_memory_mask() const { return used_mask_; }
  [[nodiscard]] int used_compute_slices() const { return used_compute_; }
  [[nodiscard]] int free_compute_slices() const { return model_->compute_slices - used_compute_; }
  [[nodiscard]] int count_of(const Profile& profile) const;
  [[nodiscard]] bool empty() const { return instances_.empty(); }

  // Why `profile` cannot go at `placement`, or nullopt if it can.
  [[nodiscard]] std::optional<std::string> why_not(const Profile& profile, Placement placement) const;
  [[nodiscard]] bool can_place(const Profile& profile, Placement placement) const {
    return !why_not(profile, placement);
  }
  Result<void> place(const Profile& profile, Placement placement);
  // Removes the instance at exactly this placement.
  Result<void> release(Placement placement);

  // Legal placements of `profile` that are free now.
  [[nodiscard]] std::vector<Placement> free_placements(const Profile& profile) const;
  [[nodiscard]] bool fits(const Profile& profile) const { return !free_placements(profile).empty(); }
  // Profiles of this model that could still be placed (at least once) in the free space.
  [[nodiscard]] std::vector<const Profile*> what_fits() const;

  // The free placement for `profile` that keeps the most future options open (see
  // placement_score()), ties broken toward the highest start so small instances gather at the end
  // of the GPU and leave the low slices, where the big profiles must start, free.
  [[nodiscard]] std::optional<Placement> best_placement(const Profile& profile) const;
  // The lowest-start free placement: the naive choice, kept for comparison and benchmarks.
  [[nodiscard]] std::optional<Placement> first_fit_placement(const Profile& profile) const;

  // Options left open: sum over every profile of (free placements of it) x (its memory slices).
  // Weighting by size values keeping room for big profiles, which have the fewest placements.
  [[nodiscard]] long options_score() const;

  // A compact one-line picture, e.g. "[3g.40gb@0-3|1g.10gb@4|....]"
  [[nodiscard]] std::string describe() const;

 private:
  const GpuModel* model_;
  GpuMode mode_;
  std::vector<PlacedInstance> instances_;
  std::uint32_t used_mask_ = 0;
  int used_compute_ = 0;
};

}  // namespace vgpu
