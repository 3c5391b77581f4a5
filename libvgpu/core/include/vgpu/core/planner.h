// Decides which instances a node should advertise to Slurm: a set that is jointly placeable in the
// node's free space, shaped toward pending demand in priority order. Running instances never move.
// Pure: no I/O, deterministic for the same inputs.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "vgpu/core/gpu_layout.h"

namespace vgpu {

struct PlannerGpu {
  GpuLayout occupied;    // instances that exist, or that Slurm already allocated: they never move
  bool eligible = true;  // false: the policy keeps this GPU out of the partition
};

struct Demand {
  std::string profile;  // profile name as the user wrote it
  int count = 1;
  bool starving = false;  // waited past the starvation threshold: may reserve a GPU to drain
};

struct PlannerConfig {
  std::vector<std::string> allowed_profiles;  // empty: every profile of the model
  // The layout each GPU falls back to: once demand is served, each entry is tried once, in order,
  // in the GPU's remaining free space. Empty: advertise nothing beyond demand.
  std::vector<std::string> idle_layout;
  // Tries every unit of every demand even after its profile stopped fitting: what a round did
  // before it remembered full profiles, kept as the reference its property test compares with.
  bool try_every_unit = false;
};

struct PlannedSlot {
  int gpu = 0;
  const Profile* profile = nullptr;
  Placement placement;
  std::string reason;  // "demand #2", "idle layout"
  int demand = -1;     // index into the demand it serves; -1 for the idle layout
  bool operator==(const PlannedSlot& o) const {
    return gpu == o.gpu && profile == o.profile && placement == o.placement;
  }
};

struct Plan {
  std::vector<PlannedSlot> slots;
  std::vector<int> reserved_gpus;  // GPUs left to drain for a starving demand
  std::vector<std::string> notes;  // human explanation, one decision per line

  [[nodiscard]] std::map<std::string, int> counts() const;  // profile name -> planned count
};

Plan plan_node(std::span<const PlannerGpu> gpus, const PlannerConfig& config, std::span<const Demand> demand);

// Re-places every slot of `plan` on top of the occupied layouts, from scratch. An error names the
// first slot that does not fit. This is the check that Slurm is never promised more than exists.
Result<void> verify_jointly_placeable(std::span<const PlannerGpu> gpus, const Plan& plan);

}  // namespace vgpu
