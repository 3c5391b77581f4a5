// The prolog's flow over doubles: prolog -> job record -> epilog, policy rejections, creates that
// fail or find the device in use, reruns after a crash, released and prepared slots, no room.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "node_doubles.h"
#include "node_flows_fixture.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using testing::NodeFlows;

TEST_F(NodeFlows, PrologWithoutVgpuAllocAsksSlurmWhatAJobOfAVgpuPartitionHolds) {
  // Slurm 23.11+ right after a slurmctld restart: the plugin is not loaded there yet, so the
  // prolog gets no VGPU_ALLOC although the job holds vgpu here.
  slurm->tres_per_node[42] = "gres/vgpu:1g.10gb:2\n";
  auto alloc = vgpu_alloc_for_prolog(policy, *slurm, 42, "gpu", "");
  ASSERT_TRUE(alloc) << alloc.error().message;
  EXPECT_EQ(*alloc, "1g.10gb:2");
  slurm->tres_per_node[43] = "gres:vgpu:1g.10gb:1,gres:gpu:1\n";  // 22.05's spelling
  EXPECT_EQ(*vgpu_alloc_for_prolog(policy, *slurm, 43, "cpu,gpu", ""), "1g.10gb:1");
  // The last task of an array has the array's id: squeue lists every task, each spelled by its
  // state (seen on 26.05: a job ran without its instances when this was refused).
  slurm->tres_per_node[7] = "vgpu:1g.20gb:3\ngres/vgpu:1g.20gb:3\n";
  auto array = vgpu_alloc_for_prolog(policy, *slurm, 7, "gpu", "");
  ASSERT_TRUE(array) << array.error().message;
  EXPECT_EQ(*array, "1g.20gb:3");
  slurm->tres_per_node[8] = "vgpu:1g.20gb:3\ngres/vgpu:2g.20gb:1\n";
  auto differ = vgpu_alloc_for_prolog(policy, *slurm, 8, "gpu", "");
  ASSERT_FALSE(differ);
  EXPECT_NE(differ.error().message.find("the array's tasks differ ('1g.20gb:3' and '2g.20gb:1')"), std::string::npos)
      << differ.error().message;
  // A job that holds no vgpu, or a partition no policy serves: nothing, and Slurm is not asked.
  slurm->tres_per_node[44] = "N/A\n";
  EXPECT_EQ(*vgpu_alloc_for_prolog(policy, *slurm, 44, "gpu", ""), "");
  EXPECT_EQ(*vgpu_alloc_for_prolog(policy, *slurm, 99, "cpu", ""), "");
  // VGPU_ALLOC, when set, is what the prolog uses.
  EXPECT_EQ(*vgpu_alloc_for_prolog(policy, *slurm, 99, "gpu", "3g.40gb:1"), "3g.40gb:1");
  auto failed = vgpu_alloc_for_prolog(policy, *slurm, 98, "gpu", "");
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("job 98: what it holds (squeue)"), std::string::npos) << failed.error().message;
}

TEST_F(NodeFlows, PrologCreatesExactlyThePlannedInstancesAndEpilogReleasesThem) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  ASSERT_EQ(pro->instances.size(), 2u);
  EXPECT_EQ(backend.instances().size(), 2u);
  // The job record names exactly these instances.
  std::ifstream rec(dir / "n1" / "jobs" / "42.json");
  auto j = nlohmann::json::parse(rec);
  ASSERT_EQ(j["instances"].size(), 2u);
  EXPECT_EQ(j["instances"][0]["device_uuid"], pro->instances[0].mig_uuid);
  // ... and what the job got.
  EXPECT_EQ(j["instances"][0]["model"], "H100-80GB");
  EXPECT_EQ(j["instances"][0]["compute"], j["instances"][0]["profile"] == "2g.20gb" ? "2/7" : "1/7");
  // Instances replaced their planned slots: Slurm still sees the same counts.
  EXPECT_EQ(advertised_counts(*store->load()),
            (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));

  // Re-running the prolog (slurmd retry after a crash) creates nothing new.
  auto again = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(again);
  EXPECT_EQ(backend.creates, 2);
  EXPECT_EQ(again->instances.size(), 2u);

  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  // Scrubbed, and kept idle at their slots for the next job of their profile: nothing destroyed.
  EXPECT_EQ(epi->kept, 2);
  EXPECT_EQ(epi->destroyed, 0);
  EXPECT_EQ(backend.instances().size(), 2u);
  EXPECT_EQ(scrubber.scrubbed.size(), 2u);
  EXPECT_FALSE(fs::exists(dir / "n1" / "jobs" / "42.json"));
  auto kept = store->load();
  ASSERT_TRUE(kept);
  for (const auto& inst : kept->instances) EXPECT_EQ(inst.state, InstanceState::idle) << inst.mig_uuid;
  EXPECT_EQ(advertised_counts(*kept), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
  auto history = store->history();
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].job, 42u);
  EXPECT_EQ((*history)[0].user, "alice");
  // And again: nothing left to do, nothing fails.
  auto epi2 = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi2);
  EXPECT_EQ(epi2->destroyed, 0);
}

TEST_F(NodeFlows, PolicyViolationsCancelTheJobWithEveryReason) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto r = run_prolog(ctx, {7, "bob", "gpu", "1g.10gb+me:1,1g.10gb:9", std::nullopt});
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->rejected);
  EXPECT_EQ(r->cancel_class, "policy");  // the metrics' reason label
  ASSERT_EQ(slurm->rejected.size(), 1u);
  EXPECT_EQ(slurm->rejected[0].first, 7u);
  const std::string& why = slurm->rejected[0].second;
  EXPECT_NE(why.find("1g.10gb+me"), std::string::npos) << why;
  EXPECT_NE(why.find("9"), std::string::npos) << why;
  EXPECT_TRUE(backend.instances().empty());
}

TEST_F(NodeFlows, PerUserLimitCountsInstancesAlreadyHeld) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_FALSE(run_prolog(ctx, {1, "carol", "gpu", "1g.10gb:4", std::nullopt})->rejected);
  auto r = run_prolog(ctx, {2, "carol", "gpu", "2g.20gb:2", std::nullopt});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("user carol holds 4"), std::string::npos) << r->reason;
}

TEST_F(NodeFlows, UnknownPartitionIsRejectedNotCrashed) {
  auto r = run_prolog(ctx, {3, "dave", "nosuch", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->rejected);
  EXPECT_EQ(r->cancel_class, "policy");
  EXPECT_NE(r->reason.find("partition nosuch"), std::string::npos);
}

TEST_F(NodeFlows, FailedCreateRejectsTheJobAndLeavesNothingBehind) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  backend.fail_next_create = true;
  auto r = run_prolog(ctx, {12, "hal", "gpu", "2g.20gb:1", std::nullopt});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->rejected);
  EXPECT_EQ(r->cancel_class, "hardware");
  EXPECT_NE(r->reason.find("Insufficient Resources"), std::string::npos) << r->reason;
  ASSERT_TRUE(run_epilog(ctx, 12, "cancelled"));  // Slurm runs the epilog of the cancelled job
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_EQ(advertised_counts(*store->load()),
            (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
}

TEST_F(NodeFlows, CreateRefusedBecauseTheDeviceIsInUseRequeuesTheJob) {
  // An AMD mode switch while a process outside any job still uses the GPU (EBUSY), NVML's IN_USE:
  // the job is valid, so it goes back to the queue instead of being cancelled.
  ASSERT_TRUE(run_planner_round(ctx, planner));
  backend.fail_next_create = true;
  backend.fail_create_with = ErrorCode::conflict;
  auto r = run_prolog(ctx, {12, "hal", "gpu", "2g.20gb:1", std::nullopt});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->rejected);
  EXPECT_TRUE(r->requeued);
  EXPECT_NE(r->reason.find("In use by another client"), std::string::npos) << r->reason;
  EXPECT_EQ(slurm->requeued.size(), 1u);
  ASSERT_TRUE(run_epilog(ctx, 12, "requeued"));
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_EQ(advertised_counts(*store->load()),
            (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
}

TEST_F(NodeFlows, PrologRerunRemakesAGpuInstanceItsCrashedRunLeftWithoutComputeInstance) {
  // The first prolog claimed a slot and died inside the create (nvml.after_gi_create): a GPU
  // instance at the claimed placement, no compute instance, nothing in the ledger.
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(store->update([](Ledger& l) { return claim_slots(l, 42, "2g.20gb", 1); }));
  auto l = store->load();
  ASSERT_TRUE(l);
  auto slot = std::ranges::find_if(l->plan.slots, [](const PlanSlot& s) { return s.claimed_by_job == 42u; });
  ASSERT_NE(slot, l->plan.slots.end());
  const Profile* p = Catalog::builtin().find_model("H100-80GB")->find_profile("2g.20gb");
  auto half = backend.create_gpu_instance_only(slot->gpu, p->nvml_profile_id, slot->placement);
  ASSERT_TRUE(half) << half.error().message;

  auto r = run_prolog(ctx, {42, "alice", "gpu", "2g.20gb:1", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->rejected) << r->reason;
  EXPECT_TRUE(slurm->rejected.empty());
  ASSERT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(r->instances[0].placement, slot->placement);
  EXPECT_EQ(backend.destroys, 1);
  ASSERT_EQ(backend.instances().size(), 1u);
  EXPECT_TRUE(backend.instances()[0].ci_id);
  EXPECT_NE(backend.instances()[0].gi_id, half->gi_id);
  EXPECT_EQ(backend.instances()[0].mig_uuid, r->instances[0].mig_uuid);
  EXPECT_NE(all_logs().find("had no compute instance"), std::string::npos) << all_logs();
}

// The next job of the ended job's profile, started by Slurm while the epilog is still scrubbing:
// its prolog claims the backed slot, finishes the cleanup itself, then creates at that place.
TEST_F(NodeFlows, JobStartedOnAJustReleasedPlaceWaitsForTheScrubAndRuns) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  std::vector<std::string> filled;
  for (JobId job = 20; job < 22; ++job) {  // every 3g.40gb slot of the idle layout
    auto pro = run_prolog(ctx, {job, "alice", "gpu", "3g.40gb:1", std::nullopt});
    ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
    filled.push_back(pro->instances[0].mig_uuid);
  }
  // The epilog of job 20 retired it and died before scrubbing (crash point epilog.after_retire).
  ASSERT_TRUE(store->update([](Ledger& l) -> Result<void> {
    retire_job(l, 20, 1'800'000'100, "completed");
    return {};
  }));
  ASSERT_EQ(advertised_counts(*store->load())["3g.40gb"], 2);
  auto next = run_prolog(ctx, {30, "bob", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_FALSE(next->rejected) << next->reason;
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{filled[0]})
      << "the former tenant's instance was scrubbed first";
  ASSERT_EQ(backend.instances().size(), 2u);
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_EQ(instances_of_job(*l, 30).size(), 1u);
  EXPECT_TRUE(std::ranges::none_of(slot_backings(*l), [](const auto& b) { return b.has_value(); }));
}

// The same, but the scrub fails: the instance is quarantined and its place is gone. The job gets
// free space elsewhere if there is any; it is not started on the quarantined place.
TEST_F(NodeFlows, JobOnAReleasedPlaceWhoseScrubFailsMovesToFreeSpace) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto first = run_prolog(ctx, {20, "alice", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(first && !first->rejected);
  auto other = run_prolog(ctx, {21, "alice", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(other && !other->rejected);
  ASSERT_TRUE(store->update([](Ledger& l) -> Result<void> {
    retire_job(l, 20, 1'800'000'100, "completed");
    return {};
  }));
  // Everything else unclaimed leaves the plan, so the backed slot is the only 3g.40gb one.
  ASSERT_TRUE(store->update([](Ledger& l) -> Result<void> {
    const auto backing = slot_backings(l);
    std::vector<PlanSlot> kept;
    for (std::size_t i = 0; i < l.plan.slots.size(); ++i)
      if (backing[i] || l.plan.slots[i].claimed_by_job) kept.push_back(l.plan.slots[i]);
    l.plan.slots = kept;
    return {};
  }));
  scrubber.status = ScrubStatus::failed;
  auto next = run_prolog(ctx, {30, "bob", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_FALSE(next->rejected) << next->reason;
  auto l = store->load();
  ASSERT_TRUE(l);
  const auto mine = instances_of_job(*l, 30);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_NE(mine[0]->mig_uuid, first->instances[0].mig_uuid);
  EXPECT_TRUE(
      std::ranges::any_of(l->instances, [](const LedgerInstance& i) { return i.state == InstanceState::quarantined; }));
  EXPECT_TRUE(validate(*l));
}

// A valid job Slurm started where the node has no room (slurmctld's view lagging, as right after a
// slurmctld restart) goes back to the queue: never cancelled for the node's sake.
TEST_F(NodeFlows, JobStartedWhereTheNodeHasNoRoomIsRequeuedNotCancelled) {
  ASSERT_TRUE(run_planner_round(ctx, planner));  // the idle layout: no 7g.80gb anywhere
  auto pro = run_prolog(ctx, {60, "carol", "gpu", "7g.80gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  EXPECT_TRUE(pro->requeued);
  EXPECT_FALSE(pro->rejected);
  EXPECT_TRUE(slurm->rejected.empty());
  ASSERT_EQ(slurm->requeued.size(), 1u);
  EXPECT_EQ(slurm->requeued[0].first, 60u);
  EXPECT_NE(slurm->requeued[0].second.find("vgpu: requeued: node n1: profile 7g.80gb: 0 of 1 instance(s) fit"),
            std::string::npos)
      << slurm->requeued[0].second;
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_TRUE(std::ranges::none_of(l->plan.slots, [](const PlanSlot& s) { return s.claimed_by_job == 60u; }));
  EXPECT_TRUE(backend.instances().empty());
}

TEST_F(NodeFlows, JobWithNoRoomThatSlurmWillNotRequeueIsCancelledWithBothReasons) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->requeue_refusal = "scontrol requeue 61: Only batch jobs are accepted or processed";
  auto pro = run_prolog(ctx, {61, "carol", "gpu", "7g.80gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  EXPECT_TRUE(pro->rejected);
  ASSERT_EQ(slurm->rejected.size(), 1u);
  EXPECT_NE(slurm->rejected[0].second.find("0 of 1 instance(s) fit"), std::string::npos);
  EXPECT_NE(slurm->rejected[0].second.find("could not requeue it: scontrol requeue 61: Only batch jobs"),
            std::string::npos)
      << slurm->rejected[0].second;
}

// With planner.prepare_slots every planned slot gets its instance in the planner's round, idle,
// so the job's prolog creates nothing: it takes them in the write that records its claim.
TEST_F(NodeFlows, WithPreparedSlotsTheJobsPrologCreatesNothing) {
  policy.planner.prepare_slots = true;
  auto round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;
  auto l = store->load();
  ASSERT_TRUE(l);
  ASSERT_EQ(l->plan.slots.size(), 8u);  // the idle layout on both GPUs
  EXPECT_EQ(round->prepared, 8);
  EXPECT_EQ(backend.instances().size(), 8u);
  for (const auto& inst : l->instances) EXPECT_EQ(inst.state, InstanceState::idle) << inst.mig_uuid;
  const auto counts = advertised();
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();

  const int creates = backend.creates;
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  EXPECT_EQ(backend.creates, creates);
  ASSERT_EQ(pro->instances.size(), 2u);
  for (const auto& inst : pro->instances) {
    EXPECT_EQ(inst.state, InstanceState::ready);
    EXPECT_EQ(inst.user, "alice");
  }
  EXPECT_EQ(advertised(), counts);  // Slurm counts slots, and a prepared slot is still one

  // Nothing left to prepare; the round changes nothing.
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round);
  EXPECT_EQ(round->prepared, 0);
  EXPECT_EQ(backend.creates, creates);
  // Without a scrub the job's instances are destroyed, and the next round prepares their slots again.
  scrubber.status = ScrubStatus::unavailable;
  ASSERT_TRUE(run_epilog(ctx, 42, "completed"));
  EXPECT_EQ(backend.instances().size(), 6u);
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round);
  EXPECT_EQ(round->prepared, 2);
  EXPECT_EQ(backend.instances().size(), 8u);
  problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

// The planner creates under the hardware lock; a prolog claims without it. A prolog that claimed
// a slot and then waited for the lock while the planner prepared that very slot adopts the
// instance rather than creating a second one at the same place (which the GPU would refuse).
TEST_F(NodeFlows, APrologThatWaitedForTheLockAdoptsTheInstancePreparedMeanwhile) {
  ASSERT_TRUE(run_planner_round(ctx, planner));  // plan only: prepare_slots is off here
  const std::string lock_path = ctx.node_dir() + "/hardware.lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  Result<PrologResult> pro = fail(ErrorCode::io, "not run");
  std::thread prolog([&] { pro = run_prolog(ctx, {42, "alice", "gpu", "3g.40gb:1", std::nullopt}); });
  std::optional<PlanSlot> claimed;
  for (int i = 0; i < 2000 && !claimed; ++i) {
    if (auto l = store->load(); l)
      for (const auto& slot : l->plan.slots)
        if (slot.claimed_by_job == 42u) claimed = slot;
    if (!claimed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(claimed) << "the prolog never claimed";
  // What the planner's preparation does while it holds the lock: create, record idle.
  const Profile* profile = Catalog::builtin().find_model("H100-80GB")->find_profile(claimed->profile);
  auto made = backend.create_instance(claimed->gpu, profile->nvml_profile_id, claimed->placement);
  ASSERT_TRUE(made);
  const LedgerInstance inst = instance_made_at(*claimed, *made, clock);
  ASSERT_TRUE(store->update([&](Ledger& l) { return add_instance(l, inst); }));
  const int creates = backend.creates;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  prolog.join();
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  EXPECT_FALSE(pro->requeued) << pro->reason;
  EXPECT_EQ(backend.creates, creates);
  ASSERT_EQ(pro->instances.size(), 1u);
  EXPECT_EQ(pro->instances[0].mig_uuid, made->mig_uuid);
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

}  // namespace
}  // namespace vgpu
