#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "samples.h"

namespace vgpu::scrub {
namespace {

TEST(Samples, IncludeFirstAndLastWordOfEveryChunk) {
  const std::vector<std::size_t> sizes{4096, 64, 8, 1 << 20};
  const auto s = choose_samples(sizes, 0, 1);
  EXPECT_EQ(s, (std::vector<Sample>{{0, 0}, {0, 4088}, {1, 0}, {1, 56}, {2, 0}, {3, 0}, {3, (1 << 20) - 8}}));
}

TEST(Samples, RandomWordsAreAlignedAndInsideTheirChunk) {
  const std::vector<std::size_t> sizes{1000, 24, 1 << 16, 4, 800};
  const auto s = choose_samples(sizes, 5000, 42);
  EXPECT_EQ(s.size(), 2u + 2u + 2u + 2u + 5000u);  // the 4-byte chunk has no whole word
  for (const auto& x : s) {
    ASSERT_LT(x.chunk, sizes.size());
    EXPECT_NE(x.chunk, 3u) << "sub-word chunk sampled";
    EXPECT_EQ(x.offset % kWordBytes, 0u);
    EXPECT_LE(x.offset + kWordBytes, sizes[x.chunk]) << "chunk " << x.chunk << " offset " << x.offset;
  }
}

TEST(Samples, SpreadInProportionToChunkSize) {
  const std::vector<std::size_t> sizes{std::size_t{3} << 30, std::size_t{1} << 30};
  const auto s = choose_samples(sizes, 40000, 7);
  const auto in_big = std::ranges::count_if(s, [](const Sample& x) { return x.chunk == 0; });
  // Expect 30000 of the random ones in the 3 GiB chunk; 5 sigma is about +-430.
  EXPECT_NEAR(static_cast<double>(in_big), 30000.0, 500.0);
}

TEST(Samples, SameSeedSameChoiceDifferentSeedDifferentChoice) {
  const std::vector<std::size_t> sizes{std::size_t{1} << 30, std::size_t{1} << 28};
  EXPECT_EQ(choose_samples(sizes, 100, 9), choose_samples(sizes, 100, 9));
  EXPECT_NE(choose_samples(sizes, 100, 9), choose_samples(sizes, 100, 10));
}

TEST(Samples, EmptyChunkInTheMiddleIsNeverPicked) {
  const std::vector<std::size_t> sizes{64, 0, 64};
  const auto s = choose_samples(sizes, 2000, 3);
  EXPECT_TRUE(std::ranges::none_of(s, [](const Sample& x) { return x.chunk == 1; }));
  EXPECT_TRUE(std::ranges::any_of(s, [](const Sample& x) { return x.chunk == 2 && x.offset == 32; }));
}

TEST(Samples, NothingToSampleGivesNothing) {
  EXPECT_TRUE(choose_samples(std::vector<std::size_t>{}, 100, 1).empty());
  EXPECT_TRUE(choose_samples(std::vector<std::size_t>{7}, 100, 1).empty());
}

}  // namespace
}  // namespace vgpu::scrub
