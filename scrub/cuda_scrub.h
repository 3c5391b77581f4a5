// The CUDA side of vgpu-scrub: allocate every byte the visible device will give, zero it, read a
// sample back, optionally benchmark. The only file that talks to the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "chunk_planner.h"
#include "report.h"

namespace vgpu::scrub {

enum class Method { automatic, kernel, memset };

struct ScrubOptions {
  Method method = Method::automatic;
  std::size_t random_samples = std::size_t{1} << 16;
  std::optional<std::uint64_t> seed;  // default: from std::random_device, echoed in the report
  bool bench = false;
  int bench_reps = 7;
  ChunkPolicy chunks;
};

ScrubReport run_scrub(const ScrubOptions& options);

}  // namespace vgpu::scrub
