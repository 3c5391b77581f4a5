// Moving in over doubles: a node whose GPUs hold an admin's static MIG layout gets its first
// ledger. An instance a running Slurm job uses stays that job's until its epilog, one a process
// outside Slurm uses is quarantined and left alone, and the rest of the old layout is scrubbed and
// becomes dynamic (moving_in.h).
#include <gtest/gtest.h>

#include "node_doubles.h"
#include "node_flows_fixture.h"
#include "vgpu/backend/whole_gpus.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

constexpr int k3g40 = 9, k1g10 = 19;  // NVML GPU-instance profile ids on H100-80GB

class MovingIn : public testing::NodeFlows {
 protected:
  void SetUp() override {
    NodeFlows::SetUp();
    ctx.access = &access;
    auto big = backend.create_instance(0, k3g40, {0, 4});
    auto small = backend.create_instance(0, k1g10, {4, 1});
    ASSERT_TRUE(big && small);
    training = *big;
    idle = *small;
  }
  std::optional<LedgerInstance> in_ledger(const std::string& uuid) {
    auto l = store->load();
    if (!l) return std::nullopt;
    auto it = std::ranges::find(l->instances, uuid, &LedgerInstance::mig_uuid);
    return it == l->instances.end() ? std::nullopt : std::optional<LedgerInstance>(*it);
  }
  bool on_hardware(const std::string& uuid) {
    return std::ranges::any_of(backend.instances(), [&](const InstanceInfo& i) { return i.mig_uuid == uuid; });
  }
  bool logged(std::string_view text) {
    return std::ranges::any_of(logs, [&](const std::string& l) { return l.find(text) != std::string::npos; });
  }
  testing::RecordingAccess access;
  InstanceInfo training, idle;
};

TEST_F(MovingIn, AnInstanceARunningJobUsesStaysThatJobsUntilItsEpilog) {
  backend.processes[4242] = {0, training.gi_id};
  slurm->process_jobs[4242] = {77, 1001, "alice"};
  slurm->running = {77};
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;

  auto kept = in_ledger(training.mig_uuid);
  ASSERT_TRUE(kept) << all_logs();
  EXPECT_EQ(kept->job, 77u);
  EXPECT_EQ(kept->user, "alice");
  EXPECT_TRUE(kept->adopted);
  EXPECT_EQ(kept->state, InstanceState::ready);
  EXPECT_TRUE(on_hardware(training.mig_uuid));
  EXPECT_EQ(access.owner[training.mig_uuid], 1001u) << "its job's user's alone, as a prolog's grant";
  EXPECT_TRUE(fs::exists(dir / "n1" / "jobs" / "77.json")) << "the record its epilog reads";
  // The rest of the old layout held nothing: scrubbed (a former tenant's data), then destroyed.
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{idle.mig_uuid});
  EXPECT_FALSE(on_hardware(idle.mig_uuid));
  const auto after = store->load();
  ASSERT_TRUE(after);
  for (const auto& s : after->plan.slots)
    EXPECT_TRUE(s.gpu != 0 || s.placement.start >= 4) << s.profile << "@" << s.placement.start << " over job 77's";
  // Job 77 asked Slurm for no vgpu, so Slurm never counts its instance as used: advertised, it
  // would be offered to a vgpu job while job 77 runs on it. Only the plan's slots are offered.
  const auto advertised = read_advertised_counts(ctx);
  ASSERT_TRUE(advertised) << advertised.error().message;
  const auto slots_3g = std::ranges::count(after->plan.slots, std::string("3g.40gb"), &PlanSlot::profile);
  EXPECT_EQ(advertised->contains("3g.40gb") ? advertised->at("3g.40gb") : 0, slots_3g) << "job 77's instance offered";
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << fmt::format("{}", fmt::join(*problems, "\n"));
  EXPECT_TRUE(logged("1 in use adopted for their running jobs, 0 in use quarantined")) << all_logs();

  // A later round keeps it while the job runs; its end releases it like any job's instance.
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(in_ledger(training.mig_uuid)->job, 77u);
  auto epi = run_epilog(ctx, 77, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_FALSE(in_ledger(training.mig_uuid) && in_ledger(training.mig_uuid)->job) << "no longer job 77's";
  EXPECT_EQ(scrubber.scrubbed.back(), training.mig_uuid);
  EXPECT_EQ(access.owner[training.mig_uuid], 0u) << "taken back before the scrub";
  EXPECT_FALSE(fs::exists(dir / "n1" / "jobs" / "77.json"));
}

TEST_F(MovingIn, AnInstanceAProcessOutsideSlurmUsesIsQuarantinedAndLeftAlone) {
  backend.processes[555] = {0, training.gi_id};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto kept = in_ledger(training.mig_uuid);
  ASSERT_TRUE(kept) << all_logs();
  EXPECT_EQ(kept->state, InstanceState::quarantined);
  EXPECT_TRUE(kept->adopted);
  EXPECT_FALSE(kept->job);
  EXPECT_TRUE(on_hardware(training.mig_uuid));
  EXPECT_EQ(std::ranges::count(scrubber.scrubbed, training.mig_uuid), 0) << "never scrubbed under its user";
  EXPECT_TRUE(
      logged(fmt::format("GPU 0 3g.40gb@0 {}: used by process 555, which no Slurm job of this node runs: "
                         "quarantined until an admin destroys it",
                         training.mig_uuid)))
      << all_logs();
}

TEST_F(MovingIn, AnInstanceTwoJobsUseAtOnceIsQuarantined) {
  backend.processes[11] = {0, training.gi_id};
  backend.processes[12] = {0, training.gi_id};
  slurm->process_jobs[11] = {77, 1001, "alice"};
  slurm->process_jobs[12] = {78, 1002, "bob"};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto kept = in_ledger(training.mig_uuid);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->state, InstanceState::quarantined);
  EXPECT_FALSE(kept->job);
  EXPECT_TRUE(logged("used by jobs 77 and 78 at once")) << all_logs();
}

// The rebuild runs in hooks too: a Slurm that cannot answer must not fail an epilog (a drain).
TEST_F(MovingIn, AnInstanceInUseWhoseJobSlurmCannotNameIsQuarantinedNotFailed) {
  backend.processes[4242] = {0, training.gi_id};
  slurm->pidinfo_failure = "scontrol pidinfo 4242 exited 1: slurm_load_node error: Unable to contact slurm daemon";
  auto epi = run_epilog(ctx, 12, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  auto kept = in_ledger(training.mig_uuid);
  ASSERT_TRUE(kept) << all_logs();
  EXPECT_EQ(kept->state, InstanceState::quarantined);
  EXPECT_TRUE(on_hardware(training.mig_uuid));
  EXPECT_TRUE(
      logged("process 4242: scontrol pidinfo 4242 exited 1: slurm_load_node error: Unable to contact slurm "
             "daemon: quarantined until an admin destroys it"))
      << all_logs();
}

TEST_F(MovingIn, WhereNobodyCanSayWhoUsesAGpuItsInstancesAreTakenAsUnusedAndTheLogSaysSo) {
  backend.processes_unknown = "memory: gpu 0: no nvmlDeviceGetComputeRunningProcesses_v3";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(in_ledger(training.mig_uuid) && in_ledger(training.mig_uuid)->adopted);
  EXPECT_EQ(std::ranges::count(scrubber.scrubbed, training.mig_uuid), 1);
  EXPECT_TRUE(
      logged("GPU 0: who uses its instances is unknown (memory: gpu 0: no "
             "nvmlDeviceGetComputeRunningProcesses_v3): they are taken as unused"))
      << all_logs();
  EXPECT_EQ(slurm->pidinfo_queries, 0);
}

// A GPU the old layout served whole (MIG off) to a running job is that job's too.
TEST_F(MovingIn, AWholeGpuARunningJobUsesIsThatJobs) {
  backend.mig_off = {1};
  WholeGpuBackend whole{backend, Catalog::builtin()};
  ctx.backend = &whole;
  backend.processes[31] = {1, 0};  // the driver gives a process on a GPU with MIG off no GPU instance
  slurm->process_jobs[31] = {90, 1003, "carol"};
  slurm->running = {90};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto gpu1 = in_ledger("GPU-00000001-0000-4000-8000-000000000000");
  ASSERT_TRUE(gpu1) << all_logs();
  EXPECT_EQ(gpu1->job, 90u);
  EXPECT_TRUE(gpu1->adopted);
  EXPECT_EQ(gpu1->profile, "whole.80gb");
}

// A later loss of the ledger finds the job's record first: the instance is re-adopted from it.
TEST_F(MovingIn, ALedgerLostAfterMovingInIsRebuiltFromTheAdoptedJobsRecord) {
  backend.processes[4242] = {0, training.gi_id};
  slurm->process_jobs[4242] = {77, 1001, "alice"};
  slurm->running = {77};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  fs::remove(dir / "n1" / "ledger.json");
  const int asked = slurm->pidinfo_queries;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(in_ledger(training.mig_uuid)->job, 77u);
  EXPECT_EQ(slurm->pidinfo_queries, asked) << "the record names its owner";
}

}  // namespace
}  // namespace vgpu
