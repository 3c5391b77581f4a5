// How vgpu-scrub carves device memory into allocations: ask for everything that is free, halve the
// request when cudaMalloc refuses, and keep going until even a minimum-size chunk will not fit.
// Pure so the back-off is testable without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace vgpu::scrub {

struct ChunkPolicy {
  std::size_t granularity = std::size_t{2} << 20;  // cudaMalloc rounds to 2 MiB pages anyway
  std::size_t min_chunk = std::size_t{2} << 20;    // below this the tail is not worth chasing
  std::size_t max_chunk = SIZE_MAX;                // cap per allocation (bench buffers, tests)
  std::size_t max_chunks = 4096;                   // guard against a driver that never says no
};

class ChunkPlanner {
 public:
  explicit ChunkPlanner(ChunkPolicy policy = {}) : policy_(policy), ceiling_(policy.max_chunk) {}

  // Bytes to request next given what cudaMemGetInfo now reports free; nullopt when finished.
  [[nodiscard]] std::optional<std::size_t> next_request(std::size_t free_bytes) const;
  void succeeded(std::size_t bytes);
  // A failed request lowers the ceiling for every later request: memory that would not come in
  // one piece of that size will not come later either, once other pieces are taken.
  void failed(std::size_t bytes);

  [[nodiscard]] std::size_t allocated_bytes() const { return allocated_; }
  [[nodiscard]] std::size_t chunks() const { return chunks_; }
  [[nodiscard]] std::size_t failures() const { return failures_; }

 private:
  ChunkPolicy policy_;
  std::size_t ceiling_;
  std::size_t allocated_ = 0;
  std::size_t chunks_ = 0;
  std::size_t failures_ = 0;
};

}  // namespace vgpu::scrub
