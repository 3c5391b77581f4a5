// The parts of the simulator that stand for production's surroundings: Slurm's node choice, the
// real node shapes with their host limits, shared (MPS) instances, and FGD's published table.
#include <gtest/gtest.h>

#include <vector>

#include "checking_packer.h"
#include "mig_packer.h"
#include "node_list_csv.h"
#include "published.h"
#include "slurm_node_choice.h"
#include "twin_tasks.h"

namespace vgpu::bench {
namespace {

TEST(SlurmNodeChoice, BestFitsOnCpusInsideTheTightestRunOfUsableNodes) {
  //            node: 0  1  2  3  4  5
  std::vector<bool> usable = {true, true, false, true, true, true};
  std::vector<long long> cpu = {8, 2, 0, 4, 3, 6};
  auto pick = [&](long long need) {
    return slurm_node_choice(
        6, need, [&](int n) { return bool(usable[static_cast<std::size_t>(n)]); },
        [&](int n) { return cpu[static_cast<std::size_t>(n)]; });
  };
  // Runs {0,1} with 10 CPUs and {3,4,5} with 13: the first is tighter; inside it node 1 has fewer.
  EXPECT_EQ(pick(1), 1);
  usable[1] = false;  // runs {0} (8) and {3,4,5} (13): node 0
  EXPECT_EQ(pick(1), 0);
  usable[0] = false;  // only {3,4,5}: the node with the fewest CPUs, 4
  EXPECT_EQ(pick(1), 4);
  EXPECT_EQ(pick(4), 3) << "an exact fit ends the search at the first such node";
  std::fill(usable.begin(), usable.end(), false);
  EXPECT_EQ(pick(1), -1);
}

TEST(SlurmNodeChoice, WithoutHostLimitsItIsTheFirstUsableNode) {
  auto pick = slurm_node_choice(
      5, 0, [](int n) { return n >= 2; }, [](int) { return 0LL; });
  EXPECT_EQ(pick, 2);
}

// Slurm splits runs at a weight change and takes the lightest run before the tightest one.
TEST(SlurmNodeChoice, TheLightestNodesWinBeforeTheTightestOnCpus) {
  std::vector<long long> cpu = {2, 8, 6}, weight = {2, 1, 1};
  auto usable = [](int) { return true; };
  auto free_cpu = [&](int n) { return cpu[static_cast<std::size_t>(n)]; };
  EXPECT_EQ(slurm_node_choice(3, 1, usable, free_cpu), 0) << "one weight: the fewest CPUs";
  EXPECT_EQ(slurm_node_choice(3, 1, usable, free_cpu, [&](int n) { return weight[static_cast<std::size_t>(n)]; }), 2)
      << "node 0 is heavier; of the lighter run {1, 2}, node 2 has fewer CPUs";
}

// policy planner.node_weights in the twin: with node 0's GPU in use and node 1's idle, Slurm's CPU
// best-fit alone puts the next small GPU task on node 1 (fewer free CPUs) and breaks its idle
// GPU; with the planners' weights it goes to node 0, and node 1's GPU stays whole.
TEST(NodeWeights, ASmallGpuTaskGoesToTheNodeInUseNotToAnIdleOneWithFewerCpus) {
  auto run = [](bool weights) {
    ClusterShape shape({{1, 4000, 65536}, {1, 8000, 65536}});
    MigPacker packer(h100(), shape, MigPacker::Mode::planner, NodeChoice::slurm, 7,
                     weights ? NodeWeighting::by_use : NodeWeighting::none);
    auto first = packer.allocate(share(100, 1000));  // node 0: 3000 CPUs left
    const MappedTask cpu = cpu_only(6000);
    auto host = packer.allocate(cpu);  // only node 1 has them: 2000 left, its GPU idle
    EXPECT_TRUE(first && host && first->node == 0 && host->node == 1);
    auto next = packer.allocate(share(100, 1000));
    EXPECT_TRUE(next);
    return next ? next->node : -1;
  };
  EXPECT_EQ(run(false), 1);
  EXPECT_EQ(run(true), 0);
  EXPECT_EQ(MigPacker(h100(), ClusterShape{1, 1}, MigPacker::Mode::shared, NodeChoice::slurm, 7, NodeWeighting::by_use)
                .name(),
            "shared+weights");
}

// A node's weight is the node's: Slurm weighs it for CPU-only jobs too, so with the planners'
// weights a CPU-only job goes to the node whose GPU is in use before an idle one with fewer CPUs
// (where it would have gone without them), and takes CPUs a GPU task there may need.
TEST(NodeWeights, ApplyToCpuOnlyJobsToo) {
  auto run = [](bool weights) {
    ClusterShape shape({{1, 32000, 65536}, {1, 4000, 65536}});
    MigPacker packer(h100(), shape, MigPacker::Mode::shared, NodeChoice::slurm, 7,
                     weights ? NodeWeighting::by_use : NodeWeighting::none);
    auto gpu = packer.allocate(share(100, 5000));  // only node 0 has the CPUs
    EXPECT_TRUE(gpu && gpu->node == 0);
    const MappedTask cpu = cpu_only(1000);
    auto host = packer.allocate(cpu);
    EXPECT_TRUE(host);
    return host ? host->node : -1;
  };
  EXPECT_EQ(run(false), 1) << "CPU best-fit: node 1 has fewer free CPUs";
  EXPECT_EQ(run(true), 0) << "node 0 is lighter while its GPU is in use";
}

// Node features with per-job preferences (sbatch --prefer): a CPU-only job goes to a node whose
// GPUs are all busy before one with an idle GPU, even one with fewer free CPUs, and a whole-GPU job
// to a node in use; with no preferred node usable each still starts wherever Slurm would put it.
TEST(NodePreferences, CpuOnlyJobsSpareNodesWithIdleGpusAndGpuJobsPack) {
  ClusterShape shape({{1, 32000, 65536}, {1, 4000, 65536}, {2, 16000, 65536}});
  MigPacker packer(h100(), shape, MigPacker::Mode::shared, NodeChoice::slurm, 7, NodeWeighting::none, true);
  EXPECT_EQ(packer.name(), "shared+prefer");
  auto first = packer.allocate(share(100, 5000));  // nothing in use yet: CPU best-fit, node 0 fits
  ASSERT_TRUE(first);
  EXPECT_EQ(first->node, 2) << "the fewest CPUs that suffice (node 1 lacks them)";
  const MappedTask cpu = cpu_only(1000);
  auto a = packer.allocate(cpu);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1) << "no node without an idle GPU: CPU best-fit";
  auto b = packer.allocate(whole(1, 1000));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->node, 2) << "node 2 is in use: its second GPU, not node 0's or node 1's idle one";
  auto c = packer.allocate(cpu);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->node, 2) << "node 2 has no idle GPU left: preferred over node 1's fewer CPUs";
  auto d = packer.allocate(whole(1, 1000));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->node, 1) << "no node in use has room: the fallback, CPU best-fit";
}

// A job for a part of a GPU prefers a node where a GPU is partly used, so it fills that GPU rather
// than splitting an idle one, although CPU best-fit, and a preference for nodes in use, would pick
// a node whose only busy GPU is held whole.
TEST(NodePreferences, PartsOfAGpuFillPartlyUsedGpus) {
  ClusterShape shape({{2, 16000, 65536}, {2, 32000, 65536}});
  MigPacker packer(h100(), shape, MigPacker::Mode::planner, NodeChoice::slurm, 7, NodeWeighting::none, true);
  EXPECT_EQ(packer.name(), "planner+prefer");
  auto three = packer.allocate(share(400, 1000));  // 3g.40gb
  ASSERT_TRUE(three);
  EXPECT_EQ(three->node, 0) << "no partly used GPU yet: CPU best-fit";
  auto big = packer.allocate(whole(1, 28000));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->node, 1) << "node 0, in use, lacks the CPUs: the fallback";
  auto small = packer.allocate(share(100, 1000));  // 1g.10gb
  ASSERT_TRUE(small);
  EXPECT_EQ(small->node, 0) << "node 0's GPU is partly used; node 1 (in use, fewer CPUs) would split its idle GPU";
  EXPECT_EQ(small->parts.front().gpu, three->parts.front().gpu);
}

// Node weights by free capacity: Slurm tries the fullest node that can run the job first, a best
// fit on GPUs, where its own choice best-fits CPUs; CPU-only jobs see the weights too.
TEST(NodeWeights, ByFreeCapacityTheFullestNodeIsTriedFirst) {
  ClusterShape shape({{2, 8000, 65536}, {2, 32000, 65536}});
  MigPacker packer(h100(), shape, MigPacker::Mode::planner, NodeChoice::slurm, 7, NodeWeighting::by_free_capacity,
                   true);
  EXPECT_EQ(packer.name(), "planner+prefer+fill");
  EXPECT_EQ(
      MigPacker(h100(), shape, MigPacker::Mode::shared, NodeChoice::slurm, 7, NodeWeighting::by_free_capacity).name(),
      "shared+fill");
  auto big = packer.allocate(whole(1, 1000));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->node, 0) << "both idle, equally free: CPU best-fit";
  const MappedTask cpu = cpu_only(6000);
  auto c = packer.allocate(cpu);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->node, 0) << "no node without an idle GPU: the weights, node 0 is fuller";
  auto next = packer.allocate(whole(1, 1000));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->node, 0) << "node 0 has one GPU free, node 1 two: the fuller first";
  auto last = packer.allocate(whole(1, 1000));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->node, 1) << "node 0 is full";
}

TEST(RealNodeShapes, HostCpuAndMemoryRefuseATaskEvenWithFreeGpus) {
  ClusterShape shape({{2, 4000, 8192}, {1, 16000, 65536}});
  MigPacker packer(h100(), shape, MigPacker::Mode::planner);
  MappedTask t = share(100, 6000);
  t.memory_mib = 4096;
  auto a = packer.allocate(t);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1) << "node 0 has GPUs but only 4 CPUs";
  auto b = packer.allocate(t);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->node, 1);
  auto c = packer.allocate(t);
  EXPECT_FALSE(c) << "node 1 is out of CPUs (12 of 16 taken), node 0 never had them";
  packer.release(*a);
  EXPECT_TRUE(packer.allocate(t)) << "released host resources are free again";
}

TEST(RealNodeShapes, CpuOnlyTasksTakeHostResourcesOnly) {
  ClusterShape shape({{1, 4000, 8192}});
  MigPacker packer(h100(), shape, MigPacker::Mode::planner);
  const MappedTask cpu = cpu_only(3000);
  auto a = packer.allocate(cpu);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->parts.empty());
  EXPECT_EQ(packer.allocated_slices(), 0);
  EXPECT_FALSE(packer.allocate(share(100, 2000))) << "the GPU is free, the CPUs are not";
}

TEST(SharedInstances, SharesFillOneInstanceWhichGoesWithTheLastShare) {
  CheckingPacker packer(
      std::make_unique<MigPacker>(h100(), ClusterShape{1, 1}, MigPacker::Mode::shared, NodeChoice::slurm, 1));
  auto a = packer.allocate(share(100));  // opens a 1g (142)
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parts[0].profile->name, "1g.10gb");
  auto b = packer.allocate(share(40));  // joins it: 140 of 142
  ASSERT_TRUE(b);
  EXPECT_EQ(b->parts[0].where, a->parts[0].where);
  EXPECT_EQ(packer.allocated_slices(), 1);
  auto c = packer.allocate(share(40));  // no room: a second instance
  ASSERT_TRUE(c);
  EXPECT_NE(c->parts[0].where, a->parts[0].where);
  EXPECT_EQ(packer.allocated_slices(), 2);
  packer.release(*a);
  EXPECT_EQ(packer.allocated_slices(), 2) << "b still holds a share";
  packer.release(*b);
  EXPECT_EQ(packer.allocated_slices(), 1) << "the last share ended: the instance went";
  packer.release(*c);
  EXPECT_EQ(packer.allocated_slices(), 0);
}

TEST(SharedInstances, AMinimumSizeOpensRoomierInstances) {
  CheckingPacker packer(
      std::make_unique<MigPacker>(h100(), ClusterShape{1, 1}, MigPacker::Mode::shared, NodeChoice::slurm, 7));
  std::vector<Allocation> held;
  for (int k = 0; k < 10; ++k) {
    auto a = packer.allocate(share(100));
    ASSERT_TRUE(a) << k;
    EXPECT_EQ(a->parts[0].profile->name, "7g.80gb");
    held.push_back(*a);
  }
  EXPECT_EQ(packer.allocated_slices(), 7) << "ten shares of 100 in one whole-GPU instance";
  EXPECT_FALSE(packer.allocate(share(100))) << "1000 of 1000 used";
}

TEST(NodeList, ParsesTheRealFileAndNamesTheBadField) {
  auto shape = load_node_list(VGPU_DATA_DIR "/openb/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(shape) << shape.error().message;
  EXPECT_EQ(shape->gpus(), 6212);
  EXPECT_EQ(shape->widest_node(), 8);
  auto bad = parse_node_list("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,0,T4\n", "nodes.csv");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "nodes.csv:2: column gpu: value '0': out of range [1, 64]");
  auto header = parse_node_list("name,cpu\n", "nodes.csv");
  ASSERT_FALSE(header);
  EXPECT_NE(header.error().message.find("nodes.csv:1: header 'name,cpu'"), std::string::npos);
}

TEST(Published, ReadsTheTableAndNamesTheBadField) {
  auto t = load_published(VGPU_DATA_DIR "/openb/fgd_published.csv");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(t->at("gpushare40").unallocated_pct.at("fgd"), 6.04);
  EXPECT_DOUBLE_EQ(t->at("multigpu20").unallocated_pct.at("bestfit"), 6.27);
  auto bad = parse_published("workload,fgd_unallocated_pct,seeds\ndefault,lots,10\n", "p.csv");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "p.csv:2: column fgd_unallocated_pct: value 'lots': not a percentage in [0, 100]");
  EXPECT_EQ(workload_of_trace("data/openb/openb_pod_list_multigpu20.csv"), "multigpu20");
  EXPECT_EQ(workload_of_trace("sample"), std::nullopt);
}

}  // namespace
}  // namespace vgpu::bench
