#include "vgpu/contract/reported_counts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

using namespace vgpu::contract;
using ::testing::HasSubstr;

namespace {
Advertisement adv_with(std::map<std::string, std::uint64_t, std::less<>> counts) {
  Advertisement adv;
  adv.node = "n1";
  adv.counts = std::move(counts);
  return adv;
}
std::uint64_t total_of(const ReportedCounts& r) {
  std::uint64_t sum = r.free;
  for (const auto& tc : r.advertised) sum += tc.count;
  return sum;
}
}  // namespace

TEST(ReportedCounts, PadsWithFreeToKeepTheConfiguredTotal) {
  auto r = reported_counts(adv_with({{"1g.10gb", 4}, {"3g.40gb", 1}}), 56);
  EXPECT_TRUE(r.problem.empty());
  ASSERT_EQ(r.advertised.size(), 2U);
  EXPECT_EQ(r.advertised[0].type, "1g.10gb");
  EXPECT_EQ(r.advertised[0].count, 4U);
  EXPECT_EQ(r.advertised[1].type, "3g.40gb");
  EXPECT_EQ(r.free, 51U);
  EXPECT_EQ(total_of(r), 56U);
}

TEST(ReportedCounts, ExactlyFullLeavesNoFree) {
  auto r = reported_counts(adv_with({{"1g.10gb", 56}}), 56);
  EXPECT_TRUE(r.problem.empty());
  EXPECT_EQ(r.free, 0U);
}

TEST(ReportedCounts, MissingAdvertisementReportsAllFree) {
  auto r = reported_counts(vgpu::fail(vgpu::ErrorCode::not_found, "x: no such file"), 56, {});
  EXPECT_TRUE(r.advertised.empty());
  EXPECT_EQ(r.free, 56U);
  EXPECT_THAT(r.problem, HasSubstr("no such file"));
}

TEST(ReportedCounts, OversizedAdvertisementIsRefusedNotTruncated) {
  auto r = reported_counts(adv_with({{"1g.10gb", 50}, {"2g.20gb", 7}}), 56);
  EXPECT_TRUE(r.advertised.empty());
  EXPECT_EQ(r.free, 56U);
  EXPECT_THAT(r.problem, HasSubstr("advertised 57 instances but slurm.conf declares a total of 56"));
}

TEST(ReportedCounts, OverflowingCountsAreRefused) {
  const auto huge = std::numeric_limits<std::uint64_t>::max();
  auto r = reported_counts(adv_with({{"1g.10gb", huge}, {"2g.20gb", 2}}), 56);
  EXPECT_EQ(r.free, 56U);
  EXPECT_THAT(r.problem, HasSubstr("overflow"));
}

TEST(ReportedCounts, TotalIsConstantForEveryValidSplit) {
  for (std::uint64_t a = 0; a <= 8; ++a) {
    for (std::uint64_t b = 0; a + b <= 8; ++b) {
      auto r = reported_counts(adv_with({{"1g.10gb", a}, {"7g.80gb", b}}), 8);
      EXPECT_TRUE(r.problem.empty());
      EXPECT_EQ(total_of(r), 8U) << a << " " << b;
    }
  }
}

TEST(ReportedCounts, PreviouslyReportedTypesComeBackAtZero) {
  auto r = reported_counts(adv_with({{"3g.40gb", 1}}), 8, {"1g.10gb", "3g.40gb"});
  EXPECT_TRUE(r.problem.empty());
  ASSERT_EQ(r.advertised.size(), 2U);
  EXPECT_EQ(r.advertised[0].type, "1g.10gb");
  EXPECT_EQ(r.advertised[0].count, 0U);
  EXPECT_EQ(r.advertised[1].count, 1U);
  EXPECT_EQ(r.free, 7U);
}

TEST(ReportedCounts, UnusableAdvertisementZeroesEveryPreviouslyReportedType) {
  auto r = reported_counts(vgpu::fail(vgpu::ErrorCode::corrupt, "bad"), 8, {"1g.10gb", "7g.80gb"});
  ASSERT_EQ(r.advertised.size(), 2U);
  for (const auto& tc : r.advertised) EXPECT_EQ(tc.count, 0U) << tc.type;
  EXPECT_EQ(r.free, 8U);
  EXPECT_EQ(r.problem, "bad");
}
