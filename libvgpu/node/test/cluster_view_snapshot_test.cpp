// The publisher's two answers made into a cluster view: pending lines keep squeue's pending
// fields exactly, running jobs keep their nodes, every node its line; anything else is refused.
#include "vgpu/node/cluster_view_snapshot.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "vgpu/node/slurm_text.h"

namespace vgpu {
namespace {

constexpr std::string_view kSqueue =
    "42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)|PENDING|42|\n"
    "41|train|100|2026-12-03T09:00:00|None|gres/vgpu:7g.80gb:1|2|bob|UNLIMITED|(null)|RUNNING|41|n[1-2]\n"
    "43_7|infer|100|2026-12-03T09:00:00|None|gres/vgpu:1g.10gb:1|1|carol|10|(null)|COMPLETING|45|n1\n"
    "44|infer|100|2026-12-03T09:00:00|None|gres/vgpu:1g.10gb:1|1|dave|10|(null)|CONFIGURING|44|\n"
    "46|cpu|100|2026-12-03T09:00:00|Priority|N/A|1|erin|10|(null)|PENDING|46|\n";
constexpr std::string_view kNodes =
    "NodeName=n1 Arch=x86_64 Gres=vgpu:1g.10gb:2 GresUsed=vgpu:1g.10gb:1 State=MIXED\n"
    "NodeName=n2 Arch=x86_64 Gres=vgpu:free:12 State=IDLE\n"
    "NodeName=cpu1 Arch=x86_64 Gres=(null) State=IDLE\n";

TEST(ClusterViewSnapshot, PendingRunningAndNodesAreSortedOutOfTheTwoAnswers) {
  auto view = cluster_view_from_slurm(kSqueue, kNodes, 1764790000, 5);
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->taken_at, 1764790000);
  ASSERT_EQ(view->pending.size(), 1u);  // the CPU job's demand is no planner's
  EXPECT_EQ(view->pending[0], "42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)");
  const auto pending = parse_pending_jobs(pending_text(*view));
  ASSERT_EQ(pending.jobs.size(), 1u);
  EXPECT_EQ(pending.jobs[0].id, "42");
  ASSERT_EQ(view->running.size(), 2u);  // the configuring job without nodes is on none yet
  EXPECT_EQ(view->running[0], (contract::RunningJob{41, "n[1-2]"}));
  EXPECT_EQ(view->running[1], (contract::RunningJob{45, "n1"}));
  ASSERT_EQ(view->nodes.size(), 2u);  // nor is the CPU node
  EXPECT_TRUE(view->nodes.at("n2").starts_with("NodeName=n2 "));
  auto back = contract::parse_cluster_view(contract::render_cluster_view(*view), "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *view);
}

// Three nodes: n1 in infer, n2 in infer and train, n3 in train; jobs of either partition or
// both pending, jobs on one node, on a range and on a list of them running.
ClusterViewCuts three_node_cuts() {
  contract::ClusterView whole;
  whole.taken_at = 1764790000;
  whole.pending = {"50|train|9|2026-12-03T10:00:00|Resources|gres/vgpu:7g.80gb:1|1|bob|60|(null)",
                   "51|infer|9|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)",
                   "52|infer,train|9|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)"};
  whole.nodes = {{"n1", "NodeName=n1 Gres=vgpu:1g.10gb:2 State=IDLE Partitions=infer"},
                 {"n2", "NodeName=n2 Gres=vgpu:1g.10gb:2 State=IDLE Partitions=infer,train"},
                 {"n3", "NodeName=n3 Gres=vgpu:7g.80gb:1 State=IDLE Partitions=train"}};
  whole.running = {{60, "n1"}, {61, "n[2-3]"}, {62, "n1,n3"}, {63, "n2"}, {64, "n[8-9]"}};
  return ClusterViewCuts(whole);
}

std::vector<JobId> jobs_of(const contract::ClusterView& view) {
  std::vector<JobId> jobs;
  for (const auto& r : view.running) jobs.push_back(r.job);
  return jobs;
}

TEST(ClusterViewCuts, ANodeGetsItsLineItsPartitionsDemandAndItsJobs) {
  const auto cuts = three_node_cuts();
  const auto n1 = cuts.cut("n1");
  EXPECT_EQ(n1.for_node, "n1");
  EXPECT_EQ(n1.taken_at, 1764790000);
  ASSERT_EQ(n1.nodes.size(), 1u);
  EXPECT_TRUE(n1.nodes.contains("n1"));
  ASSERT_EQ(n1.pending.size(), 2u);
  EXPECT_TRUE(n1.pending[0].starts_with("51|"));
  EXPECT_TRUE(n1.pending[1].starts_with("52|"));
  EXPECT_EQ(jobs_of(n1), (std::vector<JobId>{60, 62}));
  const auto n2 = cuts.cut("n2");  // both partitions: job 52 once, in squeue's order
  ASSERT_EQ(n2.pending.size(), 3u);
  EXPECT_TRUE(n2.pending[0].starts_with("50|"));
  EXPECT_TRUE(n2.pending[2].starts_with("52|"));
  EXPECT_EQ(jobs_of(n2), (std::vector<JobId>{61, 63}));
  EXPECT_EQ(jobs_of(cuts.cut("n3")), (std::vector<JobId>{61, 62}));
  auto back = contract::parse_cluster_view(contract::render_cluster_view(n2), "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, n2);
}

TEST(ClusterViewCuts, ANodeWithoutItsLineGetsItsJobsAndNothingOfTheOthers) {
  const auto n9 = three_node_cuts().cut("n9");
  EXPECT_EQ(n9.for_node, "n9");
  EXPECT_TRUE(n9.nodes.empty());
  EXPECT_TRUE(n9.pending.empty());
  EXPECT_EQ(jobs_of(n9), (std::vector<JobId>{64}));
  EXPECT_TRUE(three_node_cuts().cut("n7").running.empty());
}

// 64 nodes of one partition, the first drained; jobs pending for different times.
constexpr std::int64_t kTakenAt = 1796292000;  // 2026-12-03T10:00:00 UTC
contract::ClusterView busy_partition() {
  contract::ClusterView whole;
  whole.taken_at = kTakenAt;
  whole.period_s = 5;
  for (int i = 1; i <= 64; ++i) {
    const auto name = fmt::format("g{:02}", i);
    whole.nodes[name] =
        fmt::format("NodeName={} Gres=vgpu:free:14 State={} Partitions=infer", name, i == 1 ? "IDLE+DRAIN" : "IDLE");
  }
  whole.pending = {"70|infer|9|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)",        // just now
                   "71|infer|9|2026-12-03T09:59:45|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)",        // 15 s
                   "72|infer|9|2026-12-03T09:50:00|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)",        // 10 min
                   "73|infer|9|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:1|1|amy|60|maint",         // reserved
                   "74_[1-4]|infer|9|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:1|2|amy|60|(null)",  // 4 x 2 nodes
                   "75|infer|9|someday|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)"};                   // unreadable
  return whole;
}

std::map<std::string, int> cuts_holding_each_job(const contract::ClusterView& whole) {
  const ClusterViewCuts cuts(whole);
  std::map<std::string, int> held;
  for (const auto& [name, line] : whole.nodes)
    for (const auto& pending : cuts.cut(name).pending) ++held[pending.substr(0, pending.find('|'))];
  return held;
}

TEST(ClusterViewCuts, AFewNodesPrepareForANewJobAndMoreTheLongerItWaits) {
  const auto held = cuts_holding_each_job(busy_partition());
  EXPECT_EQ(held.at("70"), 4);
  EXPECT_EQ(held.at("71"), 8);
  EXPECT_EQ(held.at("72"), 63);  // every node that may start it; not the drained one
  EXPECT_EQ(held.at("74_[1-4]"), 16);
}

TEST(ClusterViewCuts, AJobWhoseFirstPreparersOfferWhatItAsksWaitsOnSlurmWithoutWidening) {
  auto whole = busy_partition();
  for (auto& [name, line] : whole.nodes)
    line = fmt::format(
        "NodeName={} Gres=vgpu:free:13,vgpu:1g.10gb:1 GresUsed=vgpu:free:0,vgpu:1g.10gb:0 State=IDLE "
        "Partitions=infer",
        name);
  auto held = cuts_holding_each_job(whole);
  EXPECT_EQ(held.at("71"), 4) << "15 s, with a 1g.10gb free on each of its first four";
  EXPECT_EQ(held.at("72"), 64) << "10 minutes: past the hold, it widens whatever is offered";
  // Allocated, the 1g.10gb is no offer: the set widens with the wait again.
  for (auto& [name, line] : whole.nodes)
    line = fmt::format(
        "NodeName={} Gres=vgpu:free:13,vgpu:1g.10gb:1 GresUsed=vgpu:free:0,vgpu:1g.10gb:1 State=IDLE "
        "Partitions=infer",
        name);
  held = cuts_holding_each_job(whole);
  EXPECT_EQ(held.at("71"), 8);
}

TEST(ClusterViewCuts, AReservedJobAndALineNoPlannerReadsGoToEveryNode) {
  const auto held = cuts_holding_each_job(busy_partition());
  EXPECT_EQ(held.at("73"), 63);
  EXPECT_EQ(held.at("75"), 63);  // each planner reports the line, as before
}

TEST(ClusterViewCuts, ADrainedNodeIsNoPreparerUnlessItsWholePartitionIs) {
  auto whole = busy_partition();
  EXPECT_TRUE(ClusterViewCuts(whole).cut("g01").pending.empty());
  for (auto& [name, line] : whole.nodes)
    line = fmt::format("NodeName={} Gres=vgpu:free:14 State=DOWN Partitions=infer", name);
  EXPECT_EQ(cuts_holding_each_job(whole).at("70"), 4);  // Slurm's view may lag; someone prepares
}

TEST(ClusterViewSnapshot, LinesThatAreNotTheQueriesAreRefusedNamingThem) {
  auto short_line = cluster_view_from_slurm("42|infer\n", kNodes, 1, 5);
  ASSERT_FALSE(short_line);
  EXPECT_NE(short_line.error().message.find("squeue line 1: \"42|infer\""), std::string::npos)
      << short_line.error().message;
  auto bad_job = cluster_view_from_slurm("a|b|c|d|e|f|g|h|i|j|RUNNING|4x|n1\n", kNodes, 1, 5);
  ASSERT_FALSE(bad_job);
  EXPECT_NE(bad_job.error().message.find("\"4x\" is not a job number"), std::string::npos);
  auto bad_node = cluster_view_from_slurm(kSqueue, "Node n1 Gres=vgpu:free:1\n", 1, 5);
  ASSERT_FALSE(bad_node);
  EXPECT_NE(bad_node.error().message.find("scontrol show node line 1"), std::string::npos);
}

}  // namespace
}  // namespace vgpu
