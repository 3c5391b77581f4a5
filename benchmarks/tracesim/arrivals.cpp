#include "arrivals.h"

#include <algorithm>
#include <random>

namespace vgpu::bench {

std::vector<int> arrival_sequence(const std::vector<MappedTask>& tasks, long long capacity_milli,
                                  std::uint64_t seed) {
  std::vector<int> gpu_tasks;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].kind == TaskKind::sharing || tasks[i].kind == TaskKind::whole_gpu)
      gpu_tasks.push_back(static_cast<int>(i));
  std::vector<int> out;
  if (gpu_tasks.empty()) return out;
  std::mt19937_64 rng(seed);
  long long arrived = 0;
  while (arrived < capacity_milli) {
    std::ranges::shuffle(gpu_tasks, rng);
    for (int i : gpu_tasks) {
      out.push_back(i);
      arrived += tasks[static_cast<std::size_t>(i)].requested_milli;
      if (arrived >= capacity_milli) break;
    }
  }
  return out;
}

ArrivalOutcome run_arrivals(Packer& packer, const std::vector<MappedTask>& tasks,
                            const std::vector<int>& sequence) {
  ArrivalOutcome o;
  o.capacity_slices = packer.capacity_slices();
  for (int i : sequence) {
    const MappedTask& t = tasks[static_cast<std::size_t>(i)];
    ++o.arrived_tasks;
    o.arrived_milli += t.requested_milli;
    if (packer.allocate(t)) {
      ++o.placed_tasks;
      o.served_milli += t.requested_milli;
    }
    o.peak_allocated_slices = std::max(o.peak_allocated_slices, packer.allocated_slices());
  }
  o.allocated_slices = packer.allocated_slices();
  return o;
}

double fluid_bound_milli(const std::vector<MappedTask>& tasks, const std::vector<int>& sequence,
                         long long capacity_slices) {
  std::vector<const MappedTask*> items;
  for (int i : sequence) items.push_back(&tasks[static_cast<std::size_t>(i)]);
  // Densest first: work per slice. Ties do not change the optimum.
  std::ranges::sort(items, [](const MappedTask* a, const MappedTask* b) {
    return a->requested_milli * b->slices() > b->requested_milli * a->slices();
  });
  double left = static_cast<double>(capacity_slices), value = 0;
  for (const MappedTask* t : items) {
    if (left <= 0) break;
    double w = t->slices();
    double take = std::min(1.0, left / w);
    value += take * static_cast<double>(t->requested_milli);
    left -= take * w;
  }
  return value;
}

}  // namespace vgpu::bench
