// What a planner costs slurmctld while a split waits to be taken or demand comes and goes: one
// handover's confirmation asks slurmctld a bounded number of times however many rounds it waits,
// and a published view newer than the handover confirms it without asking; a node keeps the
// layout it made for demand for planner.idle_return_s; a split slurmctld is slow to take is
// resent less and less often (docs/benchmarks.md, "Controller load as the cluster grows").
#include <gtest/gtest.h>

#include "node_flows_fixture.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/node/planner.h"

namespace vgpu::testing {
namespace {

using contract::kClusterViewClockMarginS;

class ControllerLoad : public NodeFlows {
 protected:
  // A round `seconds` later on the node's clock.
  Result<PlannerRoundResult> round_after(std::int64_t seconds) {
    clock += seconds;
    return run_planner_round(ctx, planner);
  }
};

TEST_F(ControllerLoad, AShrinkAsksSlurmctldAtMostThreeTimesHoweverManyRoundsItWaits) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  // The round's own view comes from the published one (no question), taken after the idle split.
  slurm->take_view(clock + kClusterViewClockMarginS);
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->polls_until_adopt = 1'000'000;  // slurmctld does not take the shrink
  ctx.confirm_poll_ms = 1;               // the timeout alone would allow hundreds of questions
  const int asked_before = slurm->polls;
  for (int i = 0; i < 6; ++i) {
    auto r = round_after(5);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->shrink_confirmed) << "round " << i;
  }
  EXPECT_EQ(slurm->polls - asked_before, 3);
  EXPECT_EQ(advertised()["7g.80gb"], 0) << "grew before slurmctld took the shrink";

  // slurmctld takes it; a view taken after the handover says so, and the round grows without
  // asking slurmctld itself.
  slurm->polls_until_adopt = 0;
  slurm->take_view(clock + kClusterViewClockMarginS);
  const int asked_after = slurm->polls;
  auto r = round_after(5);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["7g.80gb"], 2);
  EXPECT_EQ(slurm->polls, asked_after);
}

TEST_F(ControllerLoad, AViewOlderThanTheHandoverDoesNotConfirmIt) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->take_view(clock + kClusterViewClockMarginS);  // shows the idle split taken
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->polls_until_adopt = 1'000'000;
  ctx.confirm_poll_ms = 1;
  ctx.confirm_timeout_ms = 1;  // one question per round, to leave the rest to the views
  auto r = round_after(5);     // the shrink is handed over now, after the view
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->shrink_confirmed);
  const auto shrunk = advertised();
  // A view that shows the shrunk split, yet was taken before the handover: a split handed over
  // earlier could be on its way to slurmctld behind it. Not a confirmation.
  int total = 0;
  for (const auto& [type, n] : slurm->view_node->configured) total += n;
  slurm->view_node->configured = shrunk;
  slurm->view_node->configured["free"] = total;
  for (const auto& [type, n] : shrunk) slurm->view_node->configured["free"] -= n;
  r = round_after(5);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["7g.80gb"], 0);
  // The same split in a view taken after the handover is one.
  slurm->view_taken_at = clock + kClusterViewClockMarginS;
  slurm->view_node->published_at = slurm->view_taken_at;
  r = round_after(5);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["7g.80gb"], 2);
}

// A job slurmctld starts on a split's new slots is not in a view taken before slurmctld took the
// split, so nothing would wait for its launch; on 22.05 a shrink's SIGHUP between its two launch
// RPCs drains the node. So no slot is dropped until a view shows the last split taken.
TEST_F(ControllerLoad, NoSlotIsDroppedBeforeSlurmctldIsSeenHoldingTheLastSplit) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto idle = advertised();
  slurm->take_view(clock - 60);  // the last view slurmctld answered predates the idle split
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  auto r = round_after(5);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(advertised(), idle);
  EXPECT_NE(
      std::ranges::find(r->notes, "slurmctld has not shown the last split yet: no slot is dropped before it does"),
      r->notes.end());
  // A view taken after the handover that shows the split: the node reshapes.
  slurm->take_view(clock);
  r = round_after(5);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(advertised()["7g.80gb"], 2);
}

TEST_F(ControllerLoad, ASplitNeverSeenHoldsTheDropsBackForSixPeriodsAtMost) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->take_view(clock - 60);  // and no newer view comes
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  for (int i = 1; i < 6; ++i) {
    ASSERT_TRUE(round_after(5));
    EXPECT_EQ(advertised()["7g.80gb"], 0) << i * 5 << " s";
  }
  slurm->drop_view();  // asked directly from now on, as a planner without a fresh view does
  ASSERT_TRUE(round_after(5));
  EXPECT_EQ(advertised()["7g.80gb"], 2) << "30 s after the handover";
}

TEST_F(ControllerLoad, ANodeKeepsTheLayoutItMadeForDemandUntilIdleReturnHasPassed) {
  ASSERT_EQ(policy.planner.idle_return_s, 60);
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto idle = advertised();
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:2g.20gb:6\n";
  ASSERT_TRUE(round_after(5));
  const auto for_demand = advertised();
  ASSERT_GE(for_demand.at("2g.20gb"), 6);
  slurm->squeue = "";  // the job started elsewhere
  const int handovers = sighups;
  for (int waited = 5; waited < 60; waited += 5) {
    auto r = round_after(5);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(advertised(), for_demand) << waited << " s after the demand left";
  }
  EXPECT_EQ(sighups, handovers);
  ASSERT_TRUE(round_after(5));  // 60 s without demand: back, shrink first
  for (int i = 0; i < 2 && advertised() != idle; ++i) ASSERT_TRUE(round_after(5));
  EXPECT_EQ(advertised(), idle);
}

TEST_F(ControllerLoad, DemandThatComesBackWithinIdleReturnFindsTheLayoutStillThere) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const std::string job = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:2g.20gb:6\n";
  slurm->squeue = job;
  ASSERT_TRUE(round_after(5));
  const int handovers = sighups;
  slurm->squeue = "";
  ASSERT_TRUE(round_after(50));
  slurm->squeue = job;  // the next job of the stream asks the same
  ASSERT_TRUE(round_after(5));
  slurm->squeue = "";
  ASSERT_TRUE(round_after(50));  // 50 s after the second job, 105 after the first
  EXPECT_EQ(sighups, handovers) << "the layout moved between two jobs that both fit it";
}

TEST_F(ControllerLoad, ASplitSlurmctldIsSlowToTakeIsResentLessAndLessOften) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(sighups, 1);
  slurm->follows_file = false;
  slurm->configured = {{"free", 14}};
  std::vector<int> resent_at;
  for (int round = 1; round <= 30; ++round) {
    const int before = sighups;
    ASSERT_TRUE(round_after(5));
    if (sighups > before) resent_at.push_back(round);
  }
  EXPECT_EQ(resent_at, (std::vector<int>{2, 6, 14, 30}));
  // Once slurmctld agrees the count starts again: a split lost later is resent after two rounds.
  slurm->follows_file = true;
  ASSERT_TRUE(round_after(5));
  slurm->follows_file = false;
  slurm->configured = {{"free", 14}};
  const int before = sighups;
  ASSERT_TRUE(round_after(5));
  ASSERT_TRUE(round_after(5));
  EXPECT_EQ(sighups, before + 1);
}

}  // namespace
}  // namespace vgpu::testing
