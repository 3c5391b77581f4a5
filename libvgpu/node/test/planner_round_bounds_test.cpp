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
  for (int i = 0; i < n; ++i) text += fmt::format("{}|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:{}\n", 1000 + i, gres);
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

}  // namespace
}  // namespace vgpu
