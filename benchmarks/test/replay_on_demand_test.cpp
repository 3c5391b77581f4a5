// What MIG mode on demand changes in the replay, on hand-made traces: the switches it makes, the
// tasks that waited for GPUs to empty (as many as with 7g instances, which need empty GPUs too),
// and a start that switched a GPU paying the planners' start latency.
#include <gtest/gtest.h>

#include "replay.h"
#include "simulation.h"
#include "twin_tasks.h"

namespace vgpu::bench {
namespace {

TraceTask task(int num_gpu, int gpu_milli, long long arrival, long long run) {
  TraceTask t;
  t.name = "t" + std::to_string(arrival) + "-" + std::to_string(num_gpu);
  t.num_gpu = num_gpu;
  t.gpu_milli = gpu_milli;
  t.creation_s = arrival;
  t.scheduled_s = arrival;
  t.deletion_s = arrival + run;
  return t;
}

ReplayOutcome replay(PolicyKind kind, const Trace& trace, int gpus, const ReplayOptions& options = {}) {
  auto tasks = map_tasks(trace, h100(), gpus);
  auto packer = make_packer(kind, h100(), ClusterShape(gpus, gpus), StaticPlan{});
  return run_replay(*packer, trace, tasks, options);
}

// One node of 2 GPUs. A 3g.40gb (0-100 s) keeps the 2-GPU task (arrives at 10) waiting for GPU 0 to
// empty; at 200 a sub-GPU task and a single full task take the two GPUs back into MIG.
Trace two_gpu_node_day() {
  Trace t;
  t.tasks = {task(1, 300, 0, 100), task(2, 1000, 10, 50), task(1, 300, 200, 10), task(1, 1000, 200, 10)};
  return t;
}

TEST(ReplayOnDemand, CountsSwitchesAndTheTaskThatWaitedForAGpuToEmpty) {
  const ReplayOutcome r = replay(PolicyKind::planner_on_demand, two_gpu_node_day(), 2);
  ASSERT_EQ(r.started, 4);
  EXPECT_EQ(r.mode_switches, 4) << "two GPUs to whole at 100, both back to MIG at 200";
  EXPECT_EQ(r.waited_for_empty_gpu, 1);
  EXPECT_DOUBLE_EQ(r.by_class[static_cast<std::size_t>(TaskClass::multi_gpu)].max_s, 90);
}

TEST(ReplayOnDemand, A7gInstancePerGpuWaitedForTheSameEmptyGpuWithoutASwitch) {
  const ReplayOutcome r = replay(PolicyKind::planner, two_gpu_node_day(), 2);
  ASSERT_EQ(r.started, 4);
  EXPECT_EQ(r.mode_switches, 0);
  EXPECT_EQ(r.waited_for_empty_gpu, 1) << "a 7g.80gb needs every slice of its GPU too";
  EXPECT_DOUBLE_EQ(r.by_class[static_cast<std::size_t>(TaskClass::multi_gpu)].max_s, 90);
}

TEST(ReplayOnDemand, ATaskWaitingForCapacityIsNotCountedAsWaitingForAnEmptyGpu) {
  Trace t;
  t.tasks = {task(2, 1000, 0, 100), task(2, 1000, 10, 100)};  // the second waits behind the first
  const ReplayOutcome r = replay(PolicyKind::planner_on_demand, t, 2);
  ASSERT_EQ(r.started, 2);
  EXPECT_DOUBLE_EQ(r.max_wait_s, 90);
  EXPECT_EQ(r.waited_for_empty_gpu, 0) << "its GPUs were held by a whole-GPU task, not by MIG instances";
  EXPECT_EQ(r.mode_switches, 2) << "the second found both GPUs whole already";
}

// With the planners' start latency charged only where no slot the node already offers serves a
// start, an empty GPU offers a whole GPU in the mode it is in; changing the mode takes a round.
TEST(ReplayOnDemand, AStartThatSwitchedAGpuPaysTheStartLatency) {
  Trace t;
  t.tasks = {task(2, 1000, 0, 100), task(2, 1000, 200, 100)};
  ReplayOptions o;
  o.start_latency_s = 10;
  o.latency_only_for_new_slots = true;
  const ReplayOutcome on_demand = replay(PolicyKind::planner_on_demand, t, 2, o);
  ASSERT_EQ(on_demand.started, 2);
  EXPECT_DOUBLE_EQ(on_demand.max_wait_s, 10) << "the first switched both GPUs";
  EXPECT_DOUBLE_EQ(on_demand.wait_quantiles_s.front(), 0) << "the second found them whole";
  const ReplayOutcome seven_g = replay(PolicyKind::planner, t, 2, o);
  EXPECT_DOUBLE_EQ(seven_g.max_wait_s, 0) << "an empty GPU offers a 7g.80gb at once";
}

}  // namespace
}  // namespace vgpu::bench
