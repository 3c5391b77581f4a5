// MIG mode on demand in the twin's packer (planner+ondemand, shared+ondemand): multi-GPU tasks
// take whole GPUs with MIG off, all on one node; single-GPU full tasks keep a 7g.80gb; a GPU
// switches mode only while empty, and the GPUs already in the needed mode go first. Every packer
// here is wrapped in CheckingPacker, which fails any step that switches a GPU holding work.
#include <gtest/gtest.h>

#include "checking_packer.h"
#include "mig_packer.h"
#include "simulation.h"
#include "twin_tasks.h"

namespace vgpu::bench {
namespace {

CheckingPacker packer(PolicyKind kind, ClusterShape shape) {
  return CheckingPacker(make_packer(kind, h100(), std::move(shape), StaticPlan{}));
}

TEST(MigOnDemand, ATwoGpuTaskGetsTwoWholeGpusOnOneNode) {
  auto p = packer(PolicyKind::planner_on_demand, ClusterShape(8, 4));
  auto a = p.allocate(whole(2));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->parts.size(), 2u);
  for (const auto& part : a->parts) {
    EXPECT_EQ(p.shape().node_of(part.gpu), a->node);
    EXPECT_TRUE(part.mig_off) << "the physical GPU, not a MIG instance";
    EXPECT_TRUE(part.switched_mode);
    EXPECT_EQ(p.gpu_mode(part.gpu), GpuMode::whole);
  }
  EXPECT_EQ(p.mode_switches(), 2);
  EXPECT_EQ(p.allocated_slices(), 14) << "a whole GPU counts as all 7 compute slices, as a 7g does";
}

TEST(MigOnDemand, TodaysPlannerGivesAMultiGpuTaskA7gInstanceOnEachGpu) {
  auto p = packer(PolicyKind::planner, ClusterShape(8, 4));
  auto a = p.allocate(whole(2));
  ASSERT_TRUE(a);
  for (const auto& part : a->parts) {
    EXPECT_FALSE(part.mig_off);
    EXPECT_EQ(part.profile->name, "7g.80gb");
    EXPECT_EQ(p.gpu_mode(part.gpu), GpuMode::partitioned);
  }
  EXPECT_EQ(p.mode_switches(), 0);
  EXPECT_EQ(p.allocated_slices(), 14);
}

TEST(MigOnDemand, ASingleFullGpuTaskKeepsA7gInstance) {
  for (auto kind : {PolicyKind::planner_on_demand, PolicyKind::shared_on_demand}) {
    auto p = packer(kind, ClusterShape(4, 4));
    auto a = p.allocate(whole(1));
    ASSERT_TRUE(a);
    EXPECT_FALSE(a->parts[0].mig_off) << policy_name(kind);
    EXPECT_EQ(a->parts[0].profile->name, "7g.80gb");
    EXPECT_EQ(p.gpu_mode(a->parts[0].gpu), GpuMode::partitioned);
    EXPECT_EQ(p.mode_switches(), 0);
  }
}

TEST(MigOnDemand, AGpuHoldingAMigInstanceIsNeverSwitched) {
  auto p = packer(PolicyKind::planner_on_demand, ClusterShape(2, 2));
  auto small = p.allocate(share(100));
  ASSERT_TRUE(small);
  EXPECT_FALSE(p.allocate(whole(2))) << "GPU " << small->parts[0].gpu << " holds a 1g.10gb";
  EXPECT_EQ(p.gpu_mode(small->parts[0].gpu), GpuMode::partitioned);
  EXPECT_EQ(p.mode_switches(), 0) << "not even the empty GPU: the task needs both";
  p.release(*small);
  EXPECT_TRUE(p.allocate(whole(2))) << "both GPUs empty now";
  EXPECT_EQ(p.mode_switches(), 2);
}

TEST(MigOnDemand, AnEmptiedWholeGpuStaysWholeUntilASmallerTaskNeedsIt) {
  auto p = packer(PolicyKind::planner_on_demand, ClusterShape(2, 2));
  auto wide = p.allocate(whole(2));
  ASSERT_TRUE(wide);
  p.release(*wide);
  EXPECT_EQ(p.gpu_mode(0), GpuMode::whole) << "no switch while nothing asks for one";
  EXPECT_EQ(p.mode_switches(), 2);
  auto small = p.allocate(share(300));
  ASSERT_TRUE(small);
  EXPECT_TRUE(small->parts[0].switched_mode);
  EXPECT_EQ(p.gpu_mode(small->parts[0].gpu), GpuMode::partitioned);
  EXPECT_EQ(p.mode_switches(), 3);
}

// GPU 0 ends empty and partitioned, GPUs 1-2 empty and whole: the next 2-GPU task takes 1-2 (no
// switch) where the lowest GPUs would be 0-1, and a small task then takes a partitioned GPU.
TEST(MigOnDemand, TakesTheGpusAlreadyInTheNeededModeFirst) {
  auto p = packer(PolicyKind::planner_on_demand, ClusterShape(4, 4));
  auto small = p.allocate(share(100));
  auto wide = p.allocate(whole(2));
  ASSERT_TRUE(small && wide);
  ASSERT_EQ(small->parts[0].gpu, 0);
  p.release(*small);
  p.release(*wide);
  const long long before = p.mode_switches();
  auto again = p.allocate(whole(2));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->parts[0].gpu, wide->parts[0].gpu);
  EXPECT_EQ(again->parts[1].gpu, wide->parts[1].gpu);
  auto next = p.allocate(share(300));
  ASSERT_TRUE(next);
  EXPECT_EQ(p.gpu_mode(next->parts[0].gpu), GpuMode::partitioned);
  EXPECT_FALSE(next->parts[0].switched_mode);
  EXPECT_EQ(p.mode_switches(), before) << "every GPU was found in the mode it needed";
}

TEST(MigOnDemand, SharesStayInMigInstancesBesideWholeGpus) {
  auto p = packer(PolicyKind::shared_on_demand, ClusterShape(4, 4));
  auto wide = p.allocate(whole(3));
  auto a = p.allocate(share(200));
  auto b = p.allocate(share(300));
  ASSERT_TRUE(wide && a && b);
  EXPECT_EQ(a->parts[0].gpu, b->parts[0].gpu) << "the second share joins the first's instance";
  EXPECT_GT(b->parts[0].share_milli, 0);
  EXPECT_EQ(p.gpu_mode(a->parts[0].gpu), GpuMode::partitioned);
  EXPECT_EQ(p.mode_switches(), 3);
  EXPECT_EQ(p.name(), "shared+ondemand");
}

TEST(MigOnDemand, IsRefusedWhereItsNameWouldBeWrong) {
  EXPECT_THROW(MigPacker(h100(), ClusterShape(4, 4), MigPacker::Mode::planner, NodeChoice::slurm, 7,
                         NodeWeighting::by_use, false, true),
               std::invalid_argument);
  EXPECT_THROW(MigPacker(h100(), ClusterShape(4, 4), MigPacker::Mode::firstfit, NodeChoice::slurm, 7,
                         NodeWeighting::none, false, true),
               std::invalid_argument);
}

}  // namespace
}  // namespace vgpu::bench
