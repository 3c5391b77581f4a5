// Utilisation over time from tenancies (usage_report.h).
#include "usage_report.h"

#include <gtest/gtest.h>

namespace vgpuctl {
namespace {

TEST(UsageReport, ATenancyFillsTheBucketsItOverlapsInProportion) {
  // n1 has 14 compute slices. A 7-slice instance held from 50 to 150 over [0, 200) in 4 buckets
  // of 50 s: 0, 50 %, 50 %, 0 of the node, and half the whole window.
  auto r = build_usage_report({{"n1", "7g.80gb", 7, 50, 150}}, {{"n1", 14}}, 0, 200, 4);
  ASSERT_EQ(r.bucket_starts, (std::vector<std::int64_t>{0, 50, 100, 150}));
  EXPECT_EQ(r.node_utilisation.at("n1"), (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(r.profile_instances.at("7g.80gb"), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_DOUBLE_EQ(r.node_mean.at("n1"), 0.25);
  EXPECT_DOUBLE_EQ(r.profile_instance_hours.at("7g.80gb"), 100.0 / 3600);
}

TEST(UsageReport, PartsOutsideTheWindowAndNodesWithoutCapacityAreLeftOut) {
  auto r = build_usage_report({{"n1", "1g.10gb", 1, -100, 25}, {"gone", "1g.10gb", 1, 0, 100}},
                              {{"n1", 7}, {"empty", 0}}, 0, 100, 2);
  EXPECT_DOUBLE_EQ(r.node_utilisation.at("n1")[0], 25.0 / 50 / 7);
  EXPECT_DOUBLE_EQ(r.node_utilisation.at("n1")[1], 0);
  EXPECT_FALSE(r.node_utilisation.contains("gone"));
  EXPECT_FALSE(r.node_utilisation.contains("empty"));
  // The profile counts every node's instances, the unknown node's too.
  EXPECT_DOUBLE_EQ(r.profile_instances.at("1g.10gb")[0], 1.5);
}

TEST(UsageReport, AWindowThatDoesNotDivideEvenlyEndsWithAShorterBucket) {
  auto r = build_usage_report({{"n1", "1g.10gb", 7, 0, 10}}, {{"n1", 7}}, 0, 10, 3);  // buckets of 4 s: 4, 4, 2
  ASSERT_EQ(r.bucket_starts.size(), 3u);
  EXPECT_EQ(r.bucket_seconds, 4);
  EXPECT_EQ(r.node_utilisation.at("n1"), (std::vector<double>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(r.node_mean.at("n1"), 1);
}

}  // namespace
}  // namespace vgpuctl
