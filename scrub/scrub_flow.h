// The scrub procedure: allocate everything, calibrate, zero, verify a sample, optionally
// benchmark, release. Device-agnostic; vgpu-scrub runs it on CudaDevice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "chunk_planner.h"
#include "device.h"
#include "report.h"

namespace vgpu::scrub {

struct ScrubOptions {
  Method method = Method::automatic;
  std::size_t random_samples = std::size_t{1} << 16;
  std::optional<std::uint64_t> seed;  // default: from std::random_device, echoed in the report
  bool bench = false;
  int bench_reps = 7;
  std::size_t calibration_bytes = std::size_t{1} << 30;
  int calibration_reps = 3;
  ChunkPolicy chunks;
};

// Every allocation is released before it returns, whatever the outcome.
ScrubReport run_scrub(Device& device, const ScrubOptions& options);

}  // namespace vgpu::scrub
