#include "vgpu/core/shared_instance.h"

#include <gtest/gtest.h>

#include <vector>

namespace vgpu {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }
const Profile& profile(const char* name) { return *h100().find_profile(name); }

TEST(SharedInstance, CapacityIsTheInstancesShareOfTheWholeGpuRoundedDown) {
  EXPECT_EQ(share_capacity_milli(h100(), profile("1g.10gb")), 142);
  EXPECT_EQ(share_capacity_milli(h100(), profile("3g.40gb")), 428);
  EXPECT_EQ(share_capacity_milli(h100(), profile("7g.80gb")), 1000);
}

TEST(SharedInstance, AShareJoinsTheInstanceItFitsTightest) {
  std::vector<SharedInstance> open = {
      {&profile("7g.80gb"), 200},  // 800 left
      {&profile("3g.40gb"), 300},  // 128 left
      {&profile("2g.20gb"), 100},  // 185 left
  };
  EXPECT_EQ(choose_shared_instance(h100(), open, 120), 1);
  EXPECT_EQ(choose_shared_instance(h100(), open, 150), 2) << "too big for the 3g's 128 left";
  EXPECT_EQ(choose_shared_instance(h100(), open, 500), 0);
  EXPECT_EQ(choose_shared_instance(h100(), open, 801), -1) << "no instance has room";
}

TEST(SharedInstance, TiesGoToTheLowestIndex) {
  std::vector<SharedInstance> open = {{&profile("1g.10gb"), 42}, {&profile("1g.10gb"), 42}};
  EXPECT_EQ(choose_shared_instance(h100(), open, 100), 0);
  open[0].used_milli = 43;
  EXPECT_EQ(choose_shared_instance(h100(), open, 100), 1) << "exactly full after is allowed";
}

TEST(SharedInstance, NewInstanceIsTheSmallestProfileWhoseCapacityCoversTheShare) {
  EXPECT_EQ(profile_for_shared_instance(h100(), 100)->name, "1g.10gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 142)->name, "1g.10gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 143)->name, "2g.20gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 500)->name, "4g.40gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 1000)->name, "7g.80gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 0), nullptr);
  EXPECT_EQ(profile_for_shared_instance(h100(), 1001), nullptr);
}

TEST(SharedInstance, NewInstanceHonoursTheMinimumSize) {
  EXPECT_EQ(profile_for_shared_instance(h100(), 100, 3)->name, "3g.40gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 100, 7)->name, "7g.80gb");
  EXPECT_EQ(profile_for_shared_instance(h100(), 100, 8), nullptr);
}

TEST(ShareLimits, EachOfNSharesGetsAnEvenPartOfTheInstanceRoundedDown) {
  EXPECT_EQ(share_limits(profile("3g.40gb"), 4), (ShareLimits{profile("3g.40gb").memory_mib / 4, 25}));
  const auto third = share_limits(profile("7g.80gb"), 3);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->thread_percentage, 33);
  EXPECT_EQ(third->memory_mib, profile("7g.80gb").memory_mib / 3);
}

TEST(ShareLimits, AnInstanceHoldsTwoToFortyEightShares) {
  for (int shares : {0, 1, 49}) {
    const auto limits = share_limits(profile("7g.80gb"), shares);
    ASSERT_FALSE(limits) << shares;
    EXPECT_EQ(limits.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(limits.error().message.find("profile 7g.80gb: " + std::to_string(shares) + " shares"), std::string::npos)
        << limits.error().message;
  }
  EXPECT_TRUE(share_limits(profile("7g.80gb"), 48));
}

TEST(ShareLimits, SharesTooSmallForACudaContextAreRefused) {
  const auto limits = share_limits(profile("1g.10gb"), 20);  // under 512 MiB each
  ASSERT_FALSE(limits);
  EXPECT_NE(limits.error().message.find("below the 512 MiB a share needs"), std::string::npos)
      << limits.error().message;
  EXPECT_TRUE(share_limits(profile("1g.10gb"), 16));
}

}  // namespace
}  // namespace vgpu
