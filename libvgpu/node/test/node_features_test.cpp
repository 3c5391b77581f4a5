// Which GPUs count as busy for the "no idle GPU" feature (node_features.h): a job's instance, a
// share some job holds, or a slot claimed for a job; an idle or released instance does not.
#include "../node_features.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

Ledger two_gpus() {
  Ledger l;
  l.node = "n1";
  l.gpus = {LedgerGpu{0, "GPU-0", "H100-80GB", "0000:00:06.0"}, LedgerGpu{1, "GPU-1", "H100-80GB", "0000:00:07.0"}};
  return l;
}

LedgerInstance instance(int gpu, std::optional<JobId> job) {
  LedgerInstance i;
  i.gpu = gpu;
  i.profile = "1g.10gb";
  i.job = job;
  i.state = job ? InstanceState::ready : InstanceState::idle;
  return i;
}

TEST(NodeFeatures, NoIdleGpuOnlyWhenEveryGpuHasAJobsInstanceShareOrClaim) {
  const NodeGres slurm{};
  Ledger l = two_gpus();
  EXPECT_EQ(wanted_node_features(slurm, l), (WantedFeatures{false, false}));
  l.instances.push_back(instance(0, 42));
  l.instances.push_back(instance(1, std::nullopt));  // idle, kept for the next job: not busy
  EXPECT_EQ(wanted_node_features(slurm, l), (WantedFeatures{true, false}));

  Ledger shared = l;
  shared.share_groups.push_back(ShareGroup{1, {}, "quarter", {ShareHolder{43, "bob", 0}}});
  EXPECT_EQ(wanted_node_features(slurm, shared), (WantedFeatures{true, true}));
  shared.share_groups.back().holders.clear();
  EXPECT_FALSE(wanted_node_features(slurm, shared).no_idle_gpu) << "a group nobody holds";

  Ledger claimed = l;
  claimed.plan.slots.push_back(PlanSlot{1, "1g.10gb", {}, JobId{44}});
  EXPECT_TRUE(wanted_node_features(slurm, claimed).no_idle_gpu);

  EXPECT_FALSE(wanted_node_features(slurm, Ledger{}).no_idle_gpu) << "a node without GPUs";
}

TEST(NodeFeatures, InUseAlsoWhenOnlySlurmCountsAnAllocation) {
  NodeGres slurm;
  slurm.used["3g.40gb"] = 1;  // allocated, prolog not run yet
  EXPECT_TRUE(wanted_node_features(slurm, two_gpus()).in_use);
  EXPECT_FALSE(wanted_node_features(slurm, two_gpus()).no_idle_gpu);
}

}  // namespace
}  // namespace vgpu::node
