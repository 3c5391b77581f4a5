// The publisher's two answers made into a cluster view: pending lines keep squeue's pending
// fields exactly, running jobs keep their nodes, every node its line; anything else is refused.
#include "vgpu/node/cluster_view_snapshot.h"

#include <gtest/gtest.h>

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
