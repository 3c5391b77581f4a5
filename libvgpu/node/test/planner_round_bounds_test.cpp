// A planner round has bounds a queue or a stop request cannot push it past: a huge queue of
// hopeless requests costs one pass over it, and a stop (SIGTERM) ends the round at its next wait,
// leaving a consistent ledger that the next start picks up.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "node_flows_fixture.h"
#include "vgpu/node/planner.h"

namespace vgpu {
namespace {

using testing::NodeFlows;
using PlannerRoundBounds = NodeFlows;

std::string pending_lines(int n, std::string_view gres) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += fmt::format("{}|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:{}\n", 1000 + i, gres);
  return text;
}

// 50,000 pending lines of 2g.20gb:4096 once kept one round busy for over seven minutes (every unit
// of every line tried on every GPU). Now each line costs one look: the round plans what fits.
TEST_F(PlannerRoundBounds, AHugeQueueOfUnplaceableRequestsPlansWhatFits) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->squeue = pending_lines(50'000, "2g.20gb:4096");
  slurm->configured = advertised();
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["2g.20gb"], 6) << "three on each of the two H100s";
}

// A stop while slurmctld has not taken the shrink: the round returns at once, unconfirmed, with
// the dropped slots still claimable, instead of polling until the confirmation times out.
TEST_F(PlannerRoundBounds, AStopEndsTheShrinkWaitAndLeavesTheDroppedSlotsClaimable) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto before = store->load()->plan.slots.size();
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->configured = advertised();
  slurm->polls_until_adopt = 1'000'000;  // slurmctld never takes the shrink
  ctx.confirm_timeout_ms = 600'000;
  ctx.confirm_poll_ms = 1;
  int asked = 0;
  ctx.stopping = [&] { return ++asked > 3; };
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->shrink_confirmed);
  EXPECT_LE(slurm->polls, 10) << "the wait ended at the stop, not at the timeout";
  EXPECT_EQ(store->load()->plan.slots.size(), before)
      << "nothing dropped from the ledger before the shrink is confirmed";

  // The next start resumes the handover.
  ctx.stopping = nullptr;
  slurm->polls_until_adopt = 0;
  auto next = run_planner_round(ctx, planner);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"7g.80gb", 2}}));
}

TEST_F(PlannerRoundBounds, AStopBeforeThePlanLeavesThePlanAsItIs) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto plan = store->load()->plan;
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  ctx.stopping = [] { return true; };
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(store->load()->plan.generation, plan.generation);
  EXPECT_EQ(store->load()->plan.slots, plan.slots);
}

}  // namespace
}  // namespace vgpu
