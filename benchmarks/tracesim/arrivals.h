// The published methodology (FGD, Weng et al., ATC '23): tasks arrive in random order and never
// leave; arrival stops once the arrived GPU work reaches 100% of the cluster's GPU capacity, and
// the capacity still unallocated at that point is the fragmentation measure. When the trace holds
// less work than the cluster, further shuffled passes over it continue the sample (the FGD
// simulator's inflation), so every policy sees the same arrivals for a seed.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "packer.h"
#include "task_mapping.h"

namespace vgpu::bench {

// Indices into `tasks` in arrival order for `seed`, as FGD's simulator builds them: every task
// that can run at all (CPU-only ones included: they take host CPU and memory), tuned to
// `tune_ratio` x the cluster's GPU capacity in requested GPU work (random removals when the trace
// holds more; draws with replacement from the trace when it holds less), shuffled, and cut where the
// arrived GPU work first reaches 100 % of capacity, the point the published numbers are read at.
std::vector<int> arrival_sequence(const std::vector<MappedTask>& tasks, long long capacity_milli, std::uint64_t seed,
                                  double tune_ratio = 1.3);

struct ArrivalOutcome {
  int arrived_tasks = 0;
  int placed_tasks = 0;
  long long arrived_milli = 0;
  long long served_milli = 0;      // requested work of the placed tasks
  long long allocated_slices = 0;  // compute slices held by placed tasks at the end
  long long capacity_slices = 0;
  long long peak_allocated_slices = 0;  // never above capacity_slices
  int failed_cpu_only = 0;              // CPU-only tasks no node had host room for
  // Refused GPU work by class of task (sub-GPU, single GPU, multi-GPU), thousandths of a GPU.
  std::array<long long, 3> failed_milli_by_class{};
  long long mode_switches = 0;  // GPUs' MIG mode switches (MIG on demand; gpu_modes.h)
};

ArrivalOutcome run_arrivals(Packer& packer, const std::vector<MappedTask>& tasks, const std::vector<int>& sequence);

// The fluid upper bound: capacity counted in compute slices with no placement rules at all, each
// task costing its profile's slices (whole GPUs cost all of theirs). The most requested work any
// placement policy (including whole-GPU) could serve from these arrivals is at most the fractional
// knapsack optimum over them, which this returns, in thousandths of a GPU.
double fluid_bound_milli(const std::vector<MappedTask>& tasks, const std::vector<int>& sequence,
                         long long capacity_slices);

// The online ceiling with MIG rounding: the same arrivals, in order, each task costing its
// profile's slices, granted whenever that many slices are still free anywhere (no placement rules,
// no node boundaries, no host limits). No MIG-only policy that places arriving tasks as long as
// they fit can serve more, except by refusing a task now to serve a denser one later. Thousandths
// of a GPU of requested work.
long long online_mig_ceiling_milli(const std::vector<MappedTask>& tasks, const std::vector<int>& sequence,
                                   long long capacity_slices);

}  // namespace vgpu::bench
