// Trace tasks the twin's tests build by hand, on the H100-80GB.
#pragma once

#include "task_mapping.h"
#include "vgpu/core/catalog.h"

namespace vgpu::bench {

inline const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

// A fraction of one GPU (gpu_milli < 1000).
inline MappedTask share(int milli, long long cpu = 0) {
  MappedTask t;
  t.kind = TaskKind::sharing;
  t.profile = profile_for_milli(h100(), milli);
  t.gpus = 1;
  t.requested_milli = milli;
  t.cpu_milli = cpu;
  return t;
}

// Whole GPUs on one node.
inline MappedTask whole(int gpus, long long cpu = 0) {
  MappedTask t;
  t.kind = TaskKind::whole_gpu;
  t.profile = &full_gpu_profile(h100());
  t.gpus = gpus;
  t.requested_milli = 1000LL * gpus;
  t.cpu_milli = cpu;
  return t;
}

// No GPU at all: host CPUs only.
inline MappedTask cpu_only(long long cpu) {
  MappedTask t;
  t.kind = TaskKind::cpu_only;
  t.cpu_milli = cpu;
  return t;
}

}  // namespace vgpu::bench
