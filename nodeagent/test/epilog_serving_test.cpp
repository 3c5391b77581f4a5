#include "epilog_serving.h"

#include <gtest/gtest.h>

namespace vgpu::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;

TEST(EpilogServing, QuickEpilogsAreServedAndASlowOneLeavesThemToThemselvesForAWhile) {
  EpilogServing epilogs;
  const auto t0 = EpilogServing::Clock::time_point{} + minutes(60);
  EXPECT_TRUE(epilogs.serving(t0));
  EXPECT_FALSE(epilogs.served(milliseconds(30), t0)) << "an epilog that only destroys or keeps: quick";
  EXPECT_TRUE(epilogs.serving(t0 + milliseconds(1)));
  EXPECT_TRUE(epilogs.served(milliseconds(740), t0 + milliseconds(1))) << "a real scrub: the pause starts";
  EXPECT_FALSE(epilogs.serving(t0 + minutes(9)));
  EXPECT_TRUE(epilogs.serving(t0 + minutes(10) + milliseconds(1))) << "then one is served again, to look";
}

}  // namespace
}  // namespace vgpu::agent
