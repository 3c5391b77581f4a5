#include "chunk_planner.h"

#include <algorithm>

namespace vgpu::scrub {

std::optional<std::size_t> ChunkPlanner::next_request(std::size_t free_bytes) const {
  if (chunks_ >= policy_.max_chunks) return std::nullopt;
  const std::size_t g = std::max<std::size_t>(policy_.granularity, 1);
  const std::size_t want = std::min(free_bytes, ceiling_) / g * g;
  if (want < policy_.min_chunk || want == 0) return std::nullopt;
  return want;
}

void ChunkPlanner::succeeded(std::size_t bytes) {
  allocated_ += bytes;
  ++chunks_;
}

void ChunkPlanner::failed(std::size_t bytes) {
  ++failures_;
  ceiling_ = std::min(ceiling_, bytes / 2);
}

}  // namespace vgpu::scrub
