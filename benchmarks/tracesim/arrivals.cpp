#include "arrivals.h"

#include <algorithm>
#include <random>

namespace vgpu::bench {

std::vector<int> arrival_sequence(const std::vector<MappedTask>& tasks, long long capacity_milli, std::uint64_t seed,
                                  double tune_ratio) {
  std::vector<int> pool;
  long long total = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].kind != TaskKind::too_wide) {
      pool.push_back(static_cast<int>(i));
      total += tasks[i].requested_milli;
    }
  std::vector<int> out;
  if (total <= 0) return out;
  std::mt19937_64 rng(seed);
  auto target = static_cast<long long>(tune_ratio * static_cast<double>(capacity_milli));
  std::vector<int> list = pool;
  while (total > target && !list.empty()) {  // FGD's tune-down: random removals
    std::size_t k = std::uniform_int_distribution<std::size_t>(0, list.size() - 1)(rng);
    total -= tasks[static_cast<std::size_t>(list[k])].requested_milli;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(k));
  }
  if (total < target) {  // FGD's tune-up: copies drawn with replacement until the next overshoots
    std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
    while (true) {
      int i = pool[pick(rng)];
      long long r = tasks[static_cast<std::size_t>(i)].requested_milli;
      if (total + r > target) break;
      list.push_back(i);
      total += r;
    }
  }
  std::ranges::shuffle(list, rng);
  long long arrived = 0;
  for (int i : list) {
    if (arrived >= capacity_milli) break;
    out.push_back(i);
    arrived += tasks[static_cast<std::size_t>(i)].requested_milli;
  }
  return out;
}

ArrivalOutcome run_arrivals(Packer& packer, const std::vector<MappedTask>& tasks, const std::vector<int>& sequence) {
  ArrivalOutcome o;
  o.capacity_slices = packer.capacity_slices();
  for (int i : sequence) {
    const MappedTask& t = tasks[static_cast<std::size_t>(i)];
    ++o.arrived_tasks;
    o.arrived_milli += t.requested_milli;
    if (packer.allocate(t)) {
      ++o.placed_tasks;
      o.served_milli += t.requested_milli;
    } else if (t.kind == TaskKind::cpu_only) {
      ++o.failed_cpu_only;
    } else {
      std::size_t c = t.kind == TaskKind::sharing ? 0 : t.gpus > 1 ? 2 : 1;
      o.failed_milli_by_class[c] += t.requested_milli;
    }
    o.peak_allocated_slices = std::max(o.peak_allocated_slices, packer.allocated_slices());
  }
  o.allocated_slices = packer.allocated_slices();
  o.mode_switches = packer.mode_switches();
  return o;
}

double fluid_bound_milli(const std::vector<MappedTask>& tasks, const std::vector<int>& sequence,
                         long long capacity_slices) {
  std::vector<const MappedTask*> items;
  for (int i : sequence)
    if (tasks[static_cast<std::size_t>(i)].slices() > 0) items.push_back(&tasks[static_cast<std::size_t>(i)]);
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

namespace vgpu::bench {

long long online_mig_ceiling_milli(const std::vector<MappedTask>& tasks, const std::vector<int>& sequence,
                                   long long capacity_slices) {
  long long left = capacity_slices, served = 0;
  for (int i : sequence) {
    const MappedTask& t = tasks[static_cast<std::size_t>(i)];
    if (t.slices() == 0 || t.slices() > left) continue;
    left -= t.slices();
    served += t.requested_milli;
  }
  return served;
}

}  // namespace vgpu::bench
