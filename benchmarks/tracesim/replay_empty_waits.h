// Which tasks of the replay waited for GPUs to empty. A task for whole GPUs needs every slice of
// each of its GPUs, whether it gets the GPU with MIG off (MIG on demand) or a 7g.80gb instance on
// it, and a GPU switches MIG mode only while empty; so such a task waits for GPUs to empty when it
// is refused while a node has enough GPUs free of other whole-GPU tasks (empty, or holding only
// instances and shares of smaller tasks, which will end) but too few of them empty. The same count
// for every policy shows whether whole GPUs wait longer for their GPUs than 7g instances did.
#pragma once

#include <vector>

#include "packer.h"
#include "task_mapping.h"

namespace vgpu::bench {

class EmptyGpuWaits {
 public:
  explicit EmptyGpuWaits(int gpus) : whole_tasks_(static_cast<std::size_t>(gpus), 0) {}
  // A task started or ended: a task for whole GPUs holds each of its GPUs alone.
  void started(const Allocation& a, const MappedTask& task) { count(a, task, +1); }
  void ended(const Allocation& a, const MappedTask& task) { count(a, task, -1); }
  // Whether `task`, refused now, is waiting for GPUs to empty (held GPUs excepted; the replay's
  // clusters have no host limits, so host room is not asked).
  [[nodiscard]] bool waits_for_empty_gpus(const Packer& packer, const MappedTask& task) const;

 private:
  void count(const Allocation& a, const MappedTask& task, int delta);
  std::vector<int> whole_tasks_;  // per GPU: running tasks for whole GPUs on it (0 or 1)
};

}  // namespace vgpu::bench
