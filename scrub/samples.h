// Which device words vgpu-scrub reads back: the first and last 8-byte word of every chunk (where an
// off-by-one in chunking or a kernel's tail handling would show) plus uniformly random words over
// all scrubbed bytes. A fixed seed reproduces a run's choice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vgpu::scrub {

inline constexpr std::size_t kWordBytes = 8;

struct Sample {
  std::size_t chunk = 0;
  std::size_t offset = 0;  // bytes from the chunk start, a multiple of kWordBytes
  bool operator==(const Sample&) const = default;
};

// Chunks smaller than one word are skipped (cudaMalloc never returns those here).
std::vector<Sample> choose_samples(std::span<const std::size_t> chunk_bytes, std::size_t random_count,
                                   std::uint64_t seed);

}  // namespace vgpu::scrub
