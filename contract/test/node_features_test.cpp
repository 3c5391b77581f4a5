// The planner's node features: its two are set or cleared, an administrator's own stay in order.
#include "vgpu/contract/node_features.h"

#include <gtest/gtest.h>

namespace vgpu::contract {
namespace {

TEST(NodeFeatures, ParsesScontrolsList) {
  EXPECT_TRUE(parse_feature_list("(null)").empty());
  EXPECT_TRUE(parse_feature_list("").empty());
  EXPECT_EQ(parse_feature_list("ib,vgpu_in_use"), (std::vector<std::string>{"ib", "vgpu_in_use"}));
  EXPECT_EQ(parse_feature_list("a,,b"), (std::vector<std::string>{"a", "b"}));
}

TEST(NodeFeatures, SetsThePlannersTwoAndKeepsTheAdministratorsInOrder) {
  EXPECT_EQ(with_planner_features({}, false, false), "");
  EXPECT_EQ(with_planner_features({}, true, true), "vgpu_in_use,vgpu_no_idle_gpu");
  EXPECT_EQ(with_planner_features({"ib", "vgpu_no_idle_gpu", "nvme"}, true, false), "ib,nvme,vgpu_in_use");
  EXPECT_EQ(with_planner_features({"vgpu_in_use", "ib"}, false, false), "ib");
  // What is shown is what would be written again: a steady node needs no update.
  const std::string steady = with_planner_features({"ib"}, true, true);
  EXPECT_EQ(with_planner_features(parse_feature_list(steady), true, true), steady);
}

}  // namespace
}  // namespace vgpu::contract
