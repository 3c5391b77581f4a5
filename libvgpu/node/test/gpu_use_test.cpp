// How much of each GPU jobs hold (gpu_use.h): what the node features and the free-capacity node
// weight read.
#include "../gpu_use.h"

#include <gtest/gtest.h>

#include "../node_weight.h"
#include "held_ledger.h"

namespace vgpu::node {
namespace {

using test::instance;
using test::two_h100s;

TEST(GpuUse, CountsEachHeldPlaceOnceAndIdleInstancesAsFree) {
  Ledger l = two_h100s();
  l.instances.push_back(instance(0, 42, "3g.40gb", {4, 4}));
  l.instances.push_back(instance(0, std::nullopt, "4g.40gb", {0, 4}));   // kept idle for the next job
  l.plan.slots.push_back(PlanSlot{0, "3g.40gb", {4, 4}, JobId{42}});     // the claim the instance serves
  l.plan.slots.push_back(PlanSlot{1, "1g.10gb", {0, 1}, std::nullopt});  // offered, not claimed
  const auto use = gpu_use(l, Catalog::builtin());
  ASSERT_EQ(use.size(), 2u);
  EXPECT_TRUE(use[0].held);
  EXPECT_EQ(use[0].held_slices, 3);
  EXPECT_EQ(use[0].compute_slices, 7);
  EXPECT_FALSE(use[1].held);
  EXPECT_EQ(use[1].held_slices, 0);
  EXPECT_NEAR(free_gpus(use), 4.0 / 7 + 1.0, 1e-9);
}

TEST(GpuUse, AShareGroupHoldsItsInstanceAndOffersItsFreeSharesAsRoom) {
  const Catalog catalog =
      Catalog::with_classes(Catalog::builtin(), std::vector<GpuClass>{GpuClass{"quarter", 0, 0.0, "3g.40gb", 4}});
  Ledger l = two_h100s();
  l.share_groups.push_back(ShareGroup{1, {0, 4}, "quarter", {ShareHolder{43, "bob", 0}}});
  const auto use = gpu_use(l, catalog);
  EXPECT_EQ(use[1].held_slices, 3);
  EXPECT_NEAR(use[1].share_room, 3.0 / 4 * 3.0 / 7, 1e-9) << "three free quarters of a 3g instance";
  EXPECT_NEAR(free_gpus(use), 1.0 + 4.0 / 7 + 9.0 / 28, 1e-9);
  l.share_groups.back().holders.clear();
  EXPECT_NEAR(free_gpus(gpu_use(l, catalog)), 2.0, 1e-9) << "a group nobody holds is free";
}

TEST(NodeWeight, ByFreeCapacityIsBasePlusPerFreeGpuRounded) {
  PlannerKnobs::NodeWeights by_free;
  by_free.base = 100;
  by_free.per_free_gpu = 1000;
  EXPECT_EQ(wanted_node_weight(by_free, false, 2.0), 2100u);
  EXPECT_EQ(wanted_node_weight(by_free, true, 4.0 / 7), 671u);  // 571.43 rounded
  EXPECT_EQ(wanted_node_weight(by_free, true, 0.0), 100u) << "a full node is the lightest";
  by_free.base = 2147483000;
  EXPECT_EQ(wanted_node_weight(by_free, false, 70.0), 2147483647u) << "beyond the parser's 64 GPUs: capped";
  const PlannerKnobs::NodeWeights by_use{10, 20};
  EXPECT_EQ(wanted_node_weight(by_use, true, 2.0), 10u);
  EXPECT_EQ(wanted_node_weight(by_use, false, 2.0), 20u);
}

}  // namespace
}  // namespace vgpu::node
