// FGD's and BestFit's scores, written from the paper, and their schedulers run in the twin
// (policies fgd-twin and bestfit-twin): the check of the twin against FGD's published numbers.
#include "published_scores.h"

#include <gtest/gtest.h>

#include <numeric>

#include "checking_packer.h"
#include "mig_packer.h"
#include "twin_tasks.h"

namespace vgpu::bench {
namespace {

NodeFree node(long long cpu, std::initializer_list<int> gpus) {
  NodeFree f;
  f.cpu_milli = cpu;
  for (int g : gpus) f.gpu_milli[static_cast<std::size_t>(f.gpus++)] = static_cast<std::int16_t>(g);
  return f;
}

TEST(TypicalShapes, MostCommonGpuShapesUntilTheCoverageWithFrequenciesSummingToOne) {
  std::vector<MappedTask> tasks;
  for (int i = 0; i < 6; ++i) tasks.push_back(share(500));
  for (int i = 0; i < 3; ++i) tasks.push_back(whole(1));
  tasks.push_back(whole(2, 4000));
  const MappedTask cpu = cpu_only(1000);
  for (int i = 0; i < 20; ++i) tasks.push_back(cpu);

  auto all = typical_shapes(tasks, 1.0);
  ASSERT_EQ(all.size(), 3u) << "CPU-only tasks fragment no GPU";
  EXPECT_EQ(all[0].milli, 500);
  EXPECT_DOUBLE_EQ(all[0].frequency, 0.6);
  EXPECT_EQ(all[1].gpus, 1);
  EXPECT_EQ(all[1].milli, 1000);
  EXPECT_EQ(all[2].gpus, 2);
  EXPECT_EQ(all[2].cpu_milli, 4000);

  auto most = typical_shapes(tasks, 0.85);
  ASSERT_EQ(most.size(), 2u) << "6 + 3 of 10 tasks reach 85 %";
  double sum = 0;
  for (const auto& s : most) sum += s.frequency;
  EXPECT_DOUBLE_EQ(sum, 1.0);
  EXPECT_DOUBLE_EQ(most[0].frequency, 6.0 / 9);
}

TEST(Fragmentation, CountsWhatEachTypicalTaskCouldNotUseWeightedByItsFrequency) {
  Fragmentation frag({{1, 500, 1000, 0.5}, {1, 1000, 1000, 0.5}});
  // A 500 task fits (GPU 0) and cannot use GPU 1's 300; a whole-GPU task fits GPU 0 and cannot use
  // the 300 either.
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {1000, 300})), 0.5 * 300 + 0.5 * 300);
  // A 200 room is useless to both, the 600 only to the whole-GPU task.
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {600, 200})), 0.5 * 200 + 0.5 * 800);
  // Without CPU for either, every free thousandth is a fragment.
  EXPECT_DOUBLE_EQ(frag.of(node(500, {1000, 300})), 1300);
  // GPU order does not matter (the memo sorts), and an idle node wastes nothing.
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {300, 1000})), 300);
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {1000, 1000})), 0);
}

TEST(Fragmentation, AMultiGpuShapeNeedsThatManyRoomyGpus) {
  Fragmentation frag({{2, 1000, 1000, 1.0}});
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {1000, 1000, 400})), 400);
  EXPECT_DOUBLE_EQ(frag.of(node(8000, {1000, 400, 400})), 1800) << "one idle GPU is not two";
}

TEST(BestFitScore, LessLeftOverIsBetterWithCpuAndGpuWeightedEqually) {
  EXPECT_LT(best_fit_score(node(0, {0, 500})), best_fit_score(node(0, {1000, 500})));
  EXPECT_DOUBLE_EQ(best_fit_score(node(128'000, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000})), 1.0);
}

// FGD puts a small share into an existing fragment rather than breaking an idle GPU that the
// typical whole-GPU task could use; BestFit picks the node left fullest.
TEST(PublishedSchedulers, FgdFillsAFragmentBeforeBreakingAnIdleGpu) {
  ClusterShape shape({{1, 64'000, 0}, {1, 64'000, 0}});
  std::vector<TaskShape> typical{{1, 1000, 1000, 0.5}, {1, 300, 1000, 0.5}};
  CheckingPacker fgd(std::make_unique<MigPacker>(h100(), shape, PublishedScheduler::fgd, typical));
  EXPECT_EQ(fgd.name(), "fgd-twin");
  auto first = fgd.allocate(whole(1));  // node 0 (the nodes are alike: the lowest)
  ASSERT_TRUE(first);
  EXPECT_EQ(first->node, 0);
  auto big = fgd.allocate(share(600));  // only node 1 has room
  ASSERT_TRUE(big);
  EXPECT_EQ(big->node, 1);
  fgd.release(*first);  // node 0 idle again, node 1 holds a fragment of 400
  auto small = fgd.allocate(share(300));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->node, 1) << "joins the 600's GPU instead of breaking node 0's idle one";
  EXPECT_EQ(small->parts[0].where, big->parts[0].where) << "one shared instance";
  EXPECT_EQ(fgd.allocated_slices(), 7);
  auto one = fgd.allocate(whole(1));
  ASSERT_TRUE(one) << "node 0's GPU stayed whole";
  EXPECT_EQ(one->node, 0);
}

TEST(TypicalShapes, InMigUnitsASharingTaskCountsAsItsProfile) {
  std::vector<MappedTask> tasks{share(100), share(120), share(500), whole(1)};
  auto shapes = typical_mig_shapes(tasks, h100(), 1.0);
  ASSERT_EQ(shapes.size(), 3u) << "100 and 120 thousandths are both a 1g.10gb";
  EXPECT_EQ(shapes[0].milli, 1000 / 7);
  EXPECT_DOUBLE_EQ(shapes[0].frequency, 0.5);
  EXPECT_EQ(shapes[1].milli, 4000 / 7) << "a 4g.40gb for half a GPU";
  EXPECT_EQ(shapes[2].milli, 1000);
}

// fgd-mig: FGD's choice with dedicated instances. A small task goes into the GPU a 4g.40gb
// already split, as a MIG instance of its own, rather than breaking an idle GPU that the typical
// whole-GPU task could use.
TEST(PublishedSchedulers, FgdMigFillsASplitGpuWithADedicatedInstance) {
  ClusterShape shape({{1, 64'000, 0}, {1, 64'000, 0}});
  std::vector<TaskShape> typical{{1, 1000, 1000, 0.5}, {1, 1000 / 7, 1000, 0.5}};
  CheckingPacker fgd(
      std::make_unique<MigPacker>(h100(), shape, PublishedScheduler::fgd, typical, MigPacker::Mode::planner));
  EXPECT_EQ(fgd.name(), "fgd-mig");
  auto first = fgd.allocate(whole(1));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->node, 0);
  auto big = fgd.allocate(share(500));  // a 4g.40gb, on the only GPU left
  ASSERT_TRUE(big);
  EXPECT_EQ(big->node, 1);
  fgd.release(*first);
  auto small = fgd.allocate(share(100));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->node, 1) << "into the split GPU, not node 0's idle one";
  EXPECT_EQ(small->parts[0].share_milli, 0) << "a dedicated instance, no share";
  EXPECT_EQ(small->parts[0].profile->name, "1g.10gb");
  EXPECT_EQ(fgd.allocated_slices(), 5) << "4g.40gb and 1g.10gb: rounded to their profiles";
  auto one = fgd.allocate(whole(1));
  ASSERT_TRUE(one) << "node 0's GPU stayed whole";
  EXPECT_EQ(one->node, 0);
}

TEST(PublishedSchedulers, BestFitTakesTheNodeLeftFullestAndHonoursHostLimits) {
  ClusterShape shape({{2, 64'000, 65536}, {1, 64'000, 65536}, {1, 500, 65536}});
  CheckingPacker bestfit(
      std::make_unique<MigPacker>(h100(), shape, PublishedScheduler::bestfit, std::vector<TaskShape>{}));
  auto a = bestfit.allocate(share(500, 1000));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1) << "node 2 has too few CPUs; node 1 is left with less than node 0";
  auto b = bestfit.allocate(whole(2, 1000));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->node, 0);
  EXPECT_FALSE(bestfit.allocate(whole(1, 1000))) << "only node 2's GPU is idle, and it lacks CPUs";
  bestfit.release(*a);
  EXPECT_TRUE(bestfit.allocate(whole(1, 1000)));
}

}  // namespace
}  // namespace vgpu::bench
