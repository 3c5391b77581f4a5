#include "replay_empty_waits.h"

namespace vgpu::bench {

void EmptyGpuWaits::count(const Allocation& a, const MappedTask& task, int delta) {
  if (task.kind != TaskKind::whole_gpu) return;
  for (const auto& p : a.parts) whole_tasks_[static_cast<std::size_t>(p.gpu)] += delta;
}

bool EmptyGpuWaits::waits_for_empty_gpus(const Packer& packer, const MappedTask& task) const {
  if (task.kind != TaskKind::whole_gpu) return false;
  const ClusterShape& shape = packer.shape();
  for (int n = 0; n < shape.nodes(); ++n) {
    int free_of_whole = 0, empty = 0;
    for (int g = shape.first_gpu(n); g < shape.end_gpu(n); ++g) {
      if (packer.held(g) || whole_tasks_[static_cast<std::size_t>(g)] > 0) continue;
      ++free_of_whole;
      if (packer.gpu_used_slices(g) == 0) ++empty;
    }
    if (free_of_whole >= task.gpus && empty < task.gpus) return true;
  }
  return false;
}

}  // namespace vgpu::bench
