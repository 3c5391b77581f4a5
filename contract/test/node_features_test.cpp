// The planner's node features: its three are set or cleared, an administrator's own stay in order.
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

TEST(NodeFeatures, SetsThePlannersThreeAndKeepsTheAdministratorsInOrder) {
  EXPECT_EQ(with_planner_features({}, {}), "");
  EXPECT_EQ(with_planner_features({}, {true, true, true}), kPlannerFeatureList);
  EXPECT_EQ(with_planner_features({"ib", "vgpu_no_idle_gpu", "nvme"}, {true, false, false}), "ib,nvme,vgpu_in_use");
  EXPECT_EQ(with_planner_features({"vgpu_partly_used_gpu", "ib"}, {true, false, true}),
            "ib,vgpu_in_use,vgpu_partly_used_gpu");
  EXPECT_EQ(with_planner_features({"vgpu_in_use", "ib", "vgpu_partly_used_gpu"}, {}), "ib");
}

TEST(NodeFeatures, ReadsBackWhatItWrites) {
  for (const PlannerFeatures set : {PlannerFeatures{}, PlannerFeatures{true, false, true},
                                    PlannerFeatures{true, true, false}, PlannerFeatures{true, true, true}}) {
    const std::string written = with_planner_features({"ib"}, set);
    EXPECT_EQ(planner_features_in(parse_feature_list(written)), set) << written;
    // What is shown is what would be written again: a steady node needs no update.
    EXPECT_EQ(with_planner_features(parse_feature_list(written), set), written);
  }
  EXPECT_EQ(planner_features_in({"vgpu_in_use_not"}), PlannerFeatures{}) << "whole names only";
}

}  // namespace
}  // namespace vgpu::contract
