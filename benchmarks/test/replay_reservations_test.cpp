// The replay's reservations for starving wide tasks, on a small made-up trace where a two-GPU task
// arrives into a steady stream of one-GPU tasks that keeps both nodes busy.
#include <gtest/gtest.h>

#include <memory>

#include "checking_packer.h"
#include "mig_packer.h"
#include "replay.h"
#include "simulation.h"
#include "static_packer.h"
#include "task_mapping.h"

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

TraceTask task(int gpus, long long arrival, long long run) {
  TraceTask t;
  t.name = "t" + std::to_string(arrival);
  t.num_gpu = gpus;
  t.gpu_milli = 1000;
  t.creation_s = arrival;
  t.scheduled_s = arrival;
  t.deletion_s = arrival + run;
  return t;
}

// 2 nodes x 2 GPUs. One-GPU tasks of 100 s every 25 s: four GPUs' worth, so a GPU that frees goes
// to the next one at once and no node is ever empty. The two-GPU task arrives at 110 s, when all
// four are busy.
Trace stream_with_a_wide_task() {
  Trace t;
  for (long long at = 0; at < 4000; at += 25) t.tasks.push_back(task(1, at, 100));
  t.tasks.push_back(task(2, 110, 50));
  std::ranges::stable_sort(t.tasks, {}, &TraceTask::creation_s);
  return t;
}

ReplayOutcome replay(PolicyKind kind, long long reserve_after_s) {
  Trace trace = stream_with_a_wide_task();
  auto tasks = map_tasks(trace, h100(), 2);
  ClusterShape shape(4, 2);
  StaticPlan plan = choose_static_plan(h100(), 4, replay_demand(h100(), trace, tasks, 4 * 7));
  CheckingPacker packer(make_packer(kind, h100(), shape, plan));
  ReplayOptions o;
  o.reserve_after_s = reserve_after_s;
  ReplayOutcome r = run_replay(packer, trace, tasks, o);
  EXPECT_EQ(packer.allocated_slices(), 0) << "every task released at the end";
  EXPECT_EQ(r.never_started, 0);
  return r;
}

const ClassWaits& wide(const ReplayOutcome& r) { return r.by_class[static_cast<std::size_t>(TaskClass::multi_gpu)]; }

TEST(ReplayReservations, WithoutOneTheWideTaskWaitsForTheStreamToEnd) {
  ReplayOutcome r = replay(PolicyKind::planner, -1);
  ASSERT_EQ(wide(r).started, 1);
  EXPECT_GT(wide(r).max_s, 3500) << "two GPUs of one node are never free at once while the stream runs";
  EXPECT_EQ(r.reservations, 0);
}

TEST(ReplayReservations, OneReservationLetsItStartWhenItsNodesWorkEnds) {
  for (auto kind : {PolicyKind::planner, PolicyKind::whole, PolicyKind::static_mig}) {
    SCOPED_TRACE(std::string(policy_name(kind)));
    ReplayOutcome r = replay(kind, 60);
    ASSERT_EQ(wide(r).started, 1);
    EXPECT_EQ(r.reservations, 1);
    // Booked after 60 s of waiting; the chosen node's tasks (100 s each) end within 100 s more,
    // and none that would run past that start there (CheckingPacker fails any allocation on a
    // held GPU).
    EXPECT_LE(wide(r).max_s, 60 + 100 + 25);
    // The other node kept serving the stream meanwhile: one-GPU tasks still started.
    EXPECT_EQ(r.by_class[static_cast<std::size_t>(TaskClass::single_gpu)].never_started, 0);
  }
}

}  // namespace
}  // namespace vgpu::bench
