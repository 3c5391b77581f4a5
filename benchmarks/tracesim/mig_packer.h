// Dynamic MIG: instances are created per task wherever the policy chooses, using the plugin's own
// GpuLayout rules (through LayoutStates). Three policies share it:
//   planner  - GpuLayout::best_placement on the GPU that loses the fewest options (plan_node's
//              rule) with the fuller node preferred on ties; multi-GPU tasks best-fit a node.
//   firstfit - the lowest GPU where the profile fits, GpuLayout::first_fit_placement; first node
//              with enough empty GPUs for multi-GPU tasks.
//   whole    - classic gres/gpu: every task gets whole GPUs (the full-GPU profile), placed with
//              the planner's node rule so the baseline is not handicapped by a naive node choice.
#pragma once

#include "layout_states.h"
#include "packer.h"

namespace vgpu::bench {

class MigPacker final : public Packer {
 public:
  enum class Mode { planner, firstfit, whole };
  MigPacker(const GpuModel& model, ClusterShape shape, Mode mode);

  [[nodiscard]] std::string_view name() const override;
  std::optional<Allocation> allocate(const MappedTask& task) override;
  void release(const Allocation& allocation) override;
  [[nodiscard]] std::vector<GpuLayout> running_layouts() const override;
  [[nodiscard]] std::size_t distinct_layouts() const { return states_.size(); }

 private:
  const PlacementChoice& choice(StateId s, int profile_index);
  bool fits_somewhere(int profile_index);
  std::optional<Allocation> allocate_one(int profile_index);
  std::optional<Allocation> allocate_node(int gpus);
  void set_state(int gpu, StateId next);

  Mode mode_;
  LayoutStates states_;
  int full_index_;
  std::vector<StateId> gpu_state_;
  std::vector<int> node_free_slices_;
  std::vector<int> node_empty_gpus_;
  std::vector<int> state_population_;  // GPUs currently in each layout
};

}  // namespace vgpu::bench
