// Which GPUs count as held for the "no idle GPU" and "partly used GPU" features (node_features.h):
// a job's instance, a share some job holds, or a slot claimed for a job; an idle or released
// instance does not.
#include "../node_features.h"

#include <gtest/gtest.h>

#include "held_ledger.h"

namespace vgpu::node {
namespace {

using test::instance;
Ledger two_gpus() { return test::two_h100s(); }

TEST(NodeFeatures, NoIdleGpuOnlyWhenEveryGpuHasAJobsInstanceShareOrClaim) {
  const NodeGres slurm{};
  Ledger l = two_gpus();
  EXPECT_EQ(wanted_node_features(slurm, l, Catalog::builtin()), (WantedFeatures{false, false, false}));
  l.instances.push_back(instance(0, 42));
  l.instances.push_back(instance(1, std::nullopt));  // idle, kept for the next job: not busy
  EXPECT_EQ(wanted_node_features(slurm, l, Catalog::builtin()), (WantedFeatures{true, false, true}));

  Ledger shared = l;
  shared.share_groups.push_back(ShareGroup{1, {0, 4}, "quarter", {ShareHolder{43, "bob", 0}}});
  EXPECT_TRUE(wanted_node_features(slurm, shared, Catalog::builtin()).no_idle_gpu);
  shared.share_groups.back().holders.clear();
  EXPECT_FALSE(wanted_node_features(slurm, shared, Catalog::builtin()).no_idle_gpu) << "a group nobody holds";

  Ledger claimed = l;
  claimed.plan.slots.push_back(PlanSlot{1, "1g.10gb", {}, JobId{44}});
  EXPECT_TRUE(wanted_node_features(slurm, claimed, Catalog::builtin()).no_idle_gpu);

  EXPECT_FALSE(wanted_node_features(slurm, Ledger{}, Catalog::builtin()).no_idle_gpu) << "a node without GPUs";
}

TEST(NodeFeatures, InUseAlsoWhenOnlySlurmCountsAnAllocation) {
  NodeGres slurm;
  slurm.used["3g.40gb"] = 1;  // allocated, prolog not run yet
  EXPECT_TRUE(wanted_node_features(slurm, two_gpus(), Catalog::builtin()).in_use);
  EXPECT_FALSE(wanted_node_features(slurm, two_gpus(), Catalog::builtin()).no_idle_gpu);
}

TEST(NodeFeatures, PartlyUsedGpuWhileAHeldGpuHasComputeSlicesLeft) {
  const NodeGres slurm{};
  Ledger l = two_gpus();
  l.instances.push_back(instance(0, 42, "7g.80gb", {0, 8}));
  EXPECT_EQ(wanted_node_features(slurm, l, Catalog::builtin()), (WantedFeatures{true, false, false}))
      << "a whole GPU held, the other idle: no fragment to fill";

  l.instances.push_back(instance(1, 43, "3g.40gb", {4, 4}));
  EXPECT_EQ(wanted_node_features(slurm, l, Catalog::builtin()), (WantedFeatures{true, true, true}));

  // The claim for a 4g.40gb and the instance made for it are one place: 3 + 4 = 7 slices, full.
  l.plan.slots.push_back(PlanSlot{1, "4g.40gb", {0, 4}, JobId{44}});
  l.instances.push_back(instance(1, 44, "4g.40gb", {0, 4}));
  EXPECT_FALSE(wanted_node_features(slurm, l, Catalog::builtin()).partly_used_gpu);

  Ledger idle_room = two_gpus();
  idle_room.instances.push_back(instance(0, std::nullopt, "3g.40gb", {0, 4}));  // kept idle: not held
  EXPECT_FALSE(wanted_node_features(slurm, idle_room, Catalog::builtin()).partly_used_gpu);
}

TEST(NodeFeatures, AShareGroupCountsTheSlicesOfTheInstanceItShares) {
  const Catalog catalog =
      Catalog::with_classes(Catalog::builtin(), std::vector<GpuClass>{GpuClass{"half7g", 0, 0.0, "7g.80gb", 2}});
  const NodeGres slurm{};
  Ledger l = two_gpus();
  l.share_groups.push_back(ShareGroup{0, {0, 8}, "half7g", {ShareHolder{43, "bob", 0}}});
  EXPECT_FALSE(wanted_node_features(slurm, l, catalog).partly_used_gpu) << "its instance is the whole GPU";
  l.share_groups.back().type = "quarter";  // not in the catalog: held, its size unknown
  EXPECT_TRUE(wanted_node_features(slurm, l, catalog).partly_used_gpu);
}

}  // namespace
}  // namespace vgpu::node
