// How a trace task becomes a MIG request on the simulated GPUs. The trace asks for fractions of a
// GPU (gpu_milli); MIG can only grant whole profiles, so a sharing task gets the smallest profile
// whose compute fraction covers its request, and the difference is "rounding" capacity that is
// allocated but was never asked for. Whole- and multi-GPU tasks get the full-GPU profile per GPU.
#pragma once

#include <string>
#include <vector>

#include "trace_csv.h"
#include "vgpu/core/catalog.h"

namespace vgpu::bench {

enum class TaskKind {
  cpu_only,   // num_gpu == 0: needs only host CPU and memory (where a cluster models them)
  sharing,    // num_gpu == 1, gpu_milli < 1000
  whole_gpu,  // num_gpu >= 1 with whole GPUs, all on one node (a pod never spans nodes)
  too_wide,   // more GPUs than the largest node has: can never run, skipped and counted
};

struct MappedTask {
  int trace_index = 0;  // index into Trace::tasks
  TaskKind kind = TaskKind::cpu_only;
  const Profile* profile = nullptr;  // per GPU
  int gpus = 0;                      // GPUs needed on one node
  long long requested_milli = 0;     // what the trace asked for
  long long cpu_milli = 0;           // host resources, per task (not per GPU)
  long long memory_mib = 0;
  [[nodiscard]] int slices() const { return profile ? profile->compute_slices * gpus : 0; }
};

// The smallest profile (fewest compute, then fewest memory slices) whose compute fraction covers
// `gpu_milli`/1000. Profiles with a "+" suffix (media extensions) are never chosen: they are
// single-instance variants of the same size. Null for milli outside [1, 1000].
const Profile* profile_for_milli(const GpuModel& model, int gpu_milli);

// The profile that owns a whole GPU (all compute slices).
const Profile& full_gpu_profile(const GpuModel& model);

std::vector<MappedTask> map_tasks(const Trace& trace, const GpuModel& model, int gpus_per_node);

struct MappingSummary {
  int cpu_only = 0;
  int too_wide = 0;
  int gpu_tasks = 0;
  long long requested_milli = 0;  // sum over GPU tasks
  long long granted_slices = 0;   // compute slices of the profiles granted
};
MappingSummary summarize(const std::vector<MappedTask>& tasks);

// Rows "gpu_milli range -> profile" for the docs and the report, derived from profile_for_milli.
struct MappingRow {
  int milli_from = 0;
  int milli_to = 0;
  std::string profile;
};
std::vector<MappingRow> mapping_table(const GpuModel& model);

}  // namespace vgpu::bench
