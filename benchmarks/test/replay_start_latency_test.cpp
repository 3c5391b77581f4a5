// The replay's start latency (ReplayOptions::start_latency_s): what a start costs a policy whose
// nodes change their layout for it. A task placed at t holds its instance from t and runs from
// t + latency, so its wait grows by the latency and the task behind it waits for it longer too.
#include <gtest/gtest.h>

#include "mig_packer.h"
#include "replay.h"
#include "simulation.h"
#include "task_mapping.h"

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

TraceTask whole_gpu_task(long long arrival, long long run) {
  TraceTask t;
  t.name = "t" + std::to_string(arrival);
  t.num_gpu = 1;
  t.gpu_milli = 1000;
  t.creation_s = arrival;
  t.scheduled_s = arrival;
  t.deletion_s = arrival + run;
  return t;
}

// One GPU; two whole-GPU tasks of 100 s arrive together: the second waits for the first.
ReplayOutcome replay_two(long long latency_s, bool only_new_slots = false) {
  Trace trace;
  trace.tasks = {whole_gpu_task(0, 100), whole_gpu_task(0, 100)};
  auto tasks = map_tasks(trace, h100(), 1);
  auto packer = make_packer(PolicyKind::planner, h100(), ClusterShape(1, 1), StaticPlan{});
  ReplayOptions o;
  o.start_latency_s = latency_s;
  o.latency_only_for_new_slots = only_new_slots;
  return run_replay(*packer, trace, tasks, o);
}

TEST(ReplayStartLatency, EachStartComesThatMuchAfterItsPlacementAndHoldsItsInstanceMeanwhile) {
  const ReplayOutcome none = replay_two(0);
  ASSERT_EQ(none.started, 2);
  EXPECT_DOUBLE_EQ(none.max_wait_s, 100) << "the second starts when the first ends";
  const ReplayOutcome late = replay_two(10);
  ASSERT_EQ(late.started, 2);
  EXPECT_DOUBLE_EQ(late.max_wait_s, 120) << "first runs 10..110, the second is placed at 110, runs from 120";
  EXPECT_DOUBLE_EQ(late.wait_quantiles_s.front(), 10) << "even the first pays the latency";
}

// With a sticky plan the second task takes the slot the first one's instance left: no round.
TEST(ReplayStartLatency, AStartServedFromASlotAnEndedTaskLeftPaysNothing) {
  const ReplayOutcome sticky = replay_two(10, true);
  ASSERT_EQ(sticky.started, 2);
  EXPECT_DOUBLE_EQ(sticky.wait_quantiles_s.front(), 0) << "the empty GPU offered a whole-GPU instance";
  EXPECT_DOUBLE_EQ(sticky.max_wait_s, 100) << "the second is placed at 100 in the slot the first left";
}

// Two half-GPU tasks one after the other: the first needs its instance made (the GPU offered a
// whole one); the second finds the first's slot.
TEST(ReplayStartLatency, ASubGpuTaskOnAnEmptyGpuWaitsForItsInstance) {
  Trace trace;
  TraceTask a = whole_gpu_task(0, 100), b = whole_gpu_task(200, 100);
  a.gpu_milli = b.gpu_milli = 400;
  trace.tasks = {a, b};
  auto tasks = map_tasks(trace, h100(), 1);
  auto packer = make_packer(PolicyKind::planner, h100(), ClusterShape(1, 1), StaticPlan{});
  ReplayOptions o;
  o.start_latency_s = 10;
  o.latency_only_for_new_slots = true;
  const ReplayOutcome r = run_replay(*packer, trace, tasks, o);
  ASSERT_EQ(r.started, 2);
  EXPECT_DOUBLE_EQ(r.max_wait_s, 10);
  EXPECT_DOUBLE_EQ(r.wait_quantiles_s.front(), 0);
}

TEST(ReplayStartLatency, OnlyPoliciesThatReshapeNodesPayIt) {
  EXPECT_TRUE(reshapes_nodes(PolicyKind::planner));
  EXPECT_TRUE(reshapes_nodes(PolicyKind::shared_weighted));
  EXPECT_TRUE(reshapes_nodes(PolicyKind::firstfit));
  EXPECT_FALSE(reshapes_nodes(PolicyKind::static_mig)) << "its instances exist before the job";
  EXPECT_FALSE(reshapes_nodes(PolicyKind::whole));
}

}  // namespace
}  // namespace vgpu::bench
