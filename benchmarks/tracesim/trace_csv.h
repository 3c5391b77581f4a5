// The Alibaba "openb" pod-list CSV (cluster-trace-gpu-v2023), parsed strictly: an unexpected header,
// a short row or a malformed number is an error naming file:line, the column and the value, because a
// silently skipped row would change every number the simulator reports.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::bench {

struct TraceTask {
  std::string name;
  int line = 0;              // 1-based line in the source file, for messages
  long long cpu_milli = 0;   // host CPU, thousandths of a core
  long long memory_mib = 0;  // host memory (not GPU memory)
  int num_gpu = 0;           // whole GPUs requested; 0 = CPU-only
  int gpu_milli = 0;         // thousandths of one GPU per requested GPU (sharing tasks have num_gpu == 1)
  // Present only in the 11-column schema. Seconds from the trace start.
  long long creation_s = 0;
  long long deletion_s = 0;
  std::optional<long long> scheduled_s;  // empty: the task never ran in the real cluster

  // GPU work the task asks for, in thousandths of a GPU.
  [[nodiscard]] long long requested_milli() const { return num_gpu == 1 ? gpu_milli : 1000LL * num_gpu; }
};

struct Trace {
  std::string path;
  bool has_times = false;  // 11-column schema with creation/deletion/scheduled times
  std::vector<TraceTask> tasks;
};

// `path` only labels errors. Accepts the 5-column schema (name..gpu_milli) and the 11-column one.
Result<Trace> parse_trace(std::string_view text, std::string_view path);
Result<Trace> load_trace(const std::string& path);

}  // namespace vgpu::bench
