#include "activity.h"

#include <gtest/gtest.h>

namespace fakenvml {
namespace {

constexpr std::int64_t kSecond = 1000000000;

TEST(FakeActivity, MeanBetweenSamplesIsTheTimeWeightedUtilisationSetInBetween) {
  Activity a;
  set_activity(a, 60, 20, 1024, 10 * kSecond);
  Counters first = counters_at(a, 11 * kSecond);
  set_activity(a, 0, 0, 0, 12 * kSecond);  // the job stops halfway through the window
  Counters second = counters_at(a, 13 * kSecond);
  double sm = -1, dram = -1;
  ASSERT_TRUE(mean_between(first, second, sm, dram));
  EXPECT_DOUBLE_EQ(sm, 30);
  EXPECT_DOUBLE_EQ(dram, 10);
  EXPECT_EQ(a.memory_used_mib, 0u);
}

TEST(FakeActivity, AScopeNeverSetIsIdle) {
  Activity a;
  double sm = -1, dram = -1;
  ASSERT_TRUE(mean_between(counters_at(a, kSecond), counters_at(a, 2 * kSecond), sm, dram));
  EXPECT_EQ(sm, 0);
  EXPECT_EQ(dram, 0);
}

TEST(FakeActivity, SamplesOutOfOrderOrAtTheSameInstantGiveNoMean) {
  Activity a;
  set_activity(a, 50, 50, 0, kSecond);
  double sm = 0, dram = 0;
  EXPECT_FALSE(mean_between(counters_at(a, 3 * kSecond), counters_at(a, 2 * kSecond), sm, dram));
  EXPECT_FALSE(mean_between(counters_at(a, 2 * kSecond), counters_at(a, 2 * kSecond), sm, dram));
}

}  // namespace
}  // namespace fakenvml
