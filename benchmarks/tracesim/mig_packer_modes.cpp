// MigPacker's whole GPUs and the MIG mode of each GPU (gpu_modes.h).
#include <algorithm>

#include "mig_packer.h"

namespace vgpu::bench {

bool MigPacker::enter_mode(int gpu, GpuMode mode) {
  return modes_.enter(gpu, mode, gpu_state_[static_cast<std::size_t>(gpu)] == LayoutStates::empty());
}

Allocation MigPacker::take_empty_gpus(int node, const MappedTask& task) {
  Allocation a;
  take_host(node, task, a);
  const Profile* full = &model_->profiles[static_cast<std::size_t>(full_index_)];
  // A whole GPU is accounted as the full-GPU profile at its one placement: all of the GPU's slices.
  const GpuMode mode = mig_on_demand_ ? GpuMode::whole : GpuMode::partitioned;
  // GPUs already in the mode first: a switch makes the node change a GPU's MIG mode before the job.
  for (const bool in_mode : {true, false})
    for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node) && std::ssize(a.parts) < task.gpus; ++g) {
      if (held(g) || gpu_state_[static_cast<std::size_t>(g)] != LayoutStates::empty()) continue;
      if ((modes_.mode(g) == mode) != in_mode) continue;
      PlacementChoice c = choice(LayoutStates::empty(), full_index_);
      const bool switched = enter_mode(g, mode);
      set_state(g, c.next);
      a.parts.push_back({g, full, c.where, 0, mig_on_demand_, switched});
    }
  std::ranges::sort(a.parts, {}, &AllocationPart::gpu);
  return a;
}

}  // namespace vgpu::bench
