#include <gtest/gtest.h>

#include <vector>

#include "chunk_planner.h"

namespace vgpu::scrub {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t GiB = std::size_t{1} << 30;

// A fake device: `free` bytes, but no single allocation larger than `largest` succeeds.
struct FakeDevice {
  std::size_t free;
  std::size_t largest;
  std::vector<std::size_t> requests;
  bool malloc(std::size_t bytes) {
    requests.push_back(bytes);
    if (bytes > free || bytes > largest) return false;
    free -= bytes;
    largest = std::min(largest, free);
    return true;
  }
};

std::size_t drain(ChunkPlanner& p, FakeDevice& d) {
  std::size_t steps = 0;
  while (auto req = p.next_request(d.free)) {
    if (d.malloc(*req)) p.succeeded(*req);
    else
      p.failed(*req);
    if (++steps > 10000) break;
  }
  return steps;
}

TEST(ChunkPlanner, TakesAllFreeMemoryInOnePieceWhenTheDriverAllows) {
  ChunkPlanner p;
  FakeDevice d{80 * GiB - 500 * MiB, SIZE_MAX, {}};
  drain(p, d);
  EXPECT_EQ(p.chunks(), 1u);
  EXPECT_EQ(p.allocated_bytes(), 80 * GiB - 500 * MiB);
  EXPECT_EQ(p.failures(), 0u);
}

TEST(ChunkPlanner, HalvesOnRefusalAndStillCollectsNearlyEverything) {
  ChunkPlanner p;
  FakeDevice d{79 * GiB + 3 * MiB, 10 * GiB, {}};  // fragmented: nothing over 10 GiB fits
  drain(p, d);
  EXPECT_GT(p.failures(), 0u);
  EXPECT_GT(p.chunks(), 7u);
  // Whatever is left is below the 2 MiB floor or is the sub-granularity remainder.
  EXPECT_LT(d.free, 4 * MiB);
  EXPECT_EQ(p.allocated_bytes() + d.free, 79 * GiB + 3 * MiB);
}

TEST(ChunkPlanner, RequestsAreWholeGranulesAndNeverExceedFree) {
  ChunkPlanner p;
  EXPECT_EQ(p.next_request(5 * MiB + 12345), 4 * MiB);
  EXPECT_EQ(p.next_request(2 * MiB), 2 * MiB);
  EXPECT_EQ(p.next_request(2 * MiB - 1), std::nullopt);
  EXPECT_EQ(p.next_request(0), std::nullopt);
}

TEST(ChunkPlanner, StopsOnceEvenTheMinimumIsRefused) {
  ChunkPlanner p;
  FakeDevice d{1 * GiB, 0, {}};  // the driver refuses everything
  const auto steps = drain(p, d);
  EXPECT_EQ(p.chunks(), 0u);
  EXPECT_EQ(p.allocated_bytes(), 0u);
  // 1 GiB, 512 MiB, ..., 2 MiB: log2(512) + 1 attempts, then the ceiling is below the floor.
  EXPECT_EQ(steps, 10u);
  EXPECT_EQ(d.requests.back(), 2 * MiB);
}

TEST(ChunkPlanner, HonoursMaxChunkAndMaxChunks) {
  ChunkPlanner capped({.max_chunk = 1 * GiB});
  FakeDevice d{10 * GiB, SIZE_MAX, {}};
  drain(capped, d);
  EXPECT_EQ(capped.chunks(), 10u);
  for (auto r : d.requests) EXPECT_LE(r, 1 * GiB);

  ChunkPlanner few({.max_chunk = 1 * GiB, .max_chunks = 3});
  FakeDevice d2{10 * GiB, SIZE_MAX, {}};
  drain(few, d2);
  EXPECT_EQ(few.chunks(), 3u);
  EXPECT_EQ(few.allocated_bytes(), 3 * GiB);
}

}  // namespace
}  // namespace vgpu::scrub
