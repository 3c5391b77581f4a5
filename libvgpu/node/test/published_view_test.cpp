// A planner that reads slurmctld's view from the published cluster view (up to a period old)
// compares it only with what happened on the node before the view was taken: published_view.h.
// Each test first shows the old view being ignored, then a newer one being acted on, so the
// check cannot pass by ignoring views altogether.
#include <gtest/gtest.h>

#include "node_flows_fixture.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu::testing {
namespace {

using contract::kClusterViewClockMarginS;

class PublishedView : public NodeFlows {
 protected:
  // A round `seconds` later on the node's clock.
  void round_after(std::int64_t seconds) {
    clock += seconds;
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
  }
};

TEST_F(PublishedView, AClaimNewerThanTheViewIsNotTakenForOneARestartedSlurmctldForgot) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->ledger = nullptr;            // slurmctld counts only what `used` says: nothing of job 7 below
  clock += kClusterViewClockMarginS;  // a view taken after the first split was handed over
  slurm->take_view(clock);
  auto pro = run_prolog(ctx, {7, "alice", "gpu", "2g.20gb:2", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  round_after(1);
  const int offered = advertised()["2g.20gb"];
  ASSERT_GE(offered, 2);
  for (int i = 0; i < 3; ++i) round_after(5);  // the same old view, read again and again
  EXPECT_EQ(advertised()["2g.20gb"], offered) << "a view older than job 7's claim cannot count it";
  EXPECT_EQ(all_logs().find("slurmctld does not count"), std::string::npos) << all_logs();

  // Views taken after the claim that still do not count it: a restarted slurmctld forgot it.
  slurm->take_view(clock + kClusterViewClockMarginS);
  round_after(5);
  slurm->take_view(clock + kClusterViewClockMarginS);
  round_after(5);
  EXPECT_EQ(advertised()["2g.20gb"], offered - 2);
  EXPECT_NE(all_logs().find("slurmctld does not count instances jobs here hold (2g.20gb:2;"), std::string::npos)
      << all_logs();
}

TEST_F(PublishedView, AJobNewerThanTheViewIsNotReleasedAsEnded) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->take_view(clock);  // job 42 is not running yet
  slurm->running = {42};
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  for (int i = 0; i < 4; ++i) round_after(planner.ended_job_check_s);
  EXPECT_EQ(instances_of_job(*store->load(), 42).size(), 1u) << all_logs();

  // One newer view without it, read twice, is one answer, not two.
  slurm->running = {};
  slurm->take_view(clock + kClusterViewClockMarginS);
  round_after(planner.ended_job_check_s);
  round_after(planner.ended_job_check_s);
  EXPECT_EQ(instances_of_job(*store->load(), 42).size(), 1u) << all_logs();
  // A second newer view without it: the job ended here without its epilog.
  slurm->take_view(clock + kClusterViewClockMarginS);
  round_after(planner.ended_job_check_s);
  EXPECT_TRUE(instances_of_job(*store->load(), 42).empty()) << all_logs();
  EXPECT_NE(all_logs().find("job 42 is no longer running here"), std::string::npos) << all_logs();
  EXPECT_EQ(slurm->node_job_queries, 0) << "the view answered; slurmctld was never asked";
}

TEST_F(PublishedView, ASplitHandedOverAfterTheViewIsNotHandedOverAgain) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->take_view(clock + kClusterViewClockMarginS);  // shows the idle layout's split, taken after it
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  round_after(1);
  // The shrink was confirmed by slurmctld itself (the view still shows the old split), then grown.
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"7g.80gb", 2}}));
  const int handovers = sighups;
  for (int i = 0; i < 3; ++i) round_after(5);
  EXPECT_EQ(sighups, handovers) << "a view older than the handover shows the split before it";

  // A view taken after it that still shows another split: slurmctld lost it; handed over again.
  slurm->follows_file = false;
  slurm->configured = {{"free", 14}};
  slurm->take_view(clock + kClusterViewClockMarginS);
  round_after(5);
  round_after(5);
  EXPECT_EQ(sighups, handovers + 1);
}

}  // namespace
}  // namespace vgpu::testing
