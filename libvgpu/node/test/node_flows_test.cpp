// The node flows end to end over doubles: prolog -> job record -> epilog, planner rounds with the
// shrink-confirm-grow handover, crash recovery by rebuild, and policy rejections.
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

TEST_F(NodeFlows, FirstRoundAdvertisesTheIdleLayoutAndSignalsSlurmd) {
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->advertisement_changed);
  EXPECT_EQ(sighups, 1);
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
  // A second round with nothing new changes nothing and does not signal again.
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(sighups, 1);
}

TEST_F(NodeFlows, SplitSlurmctldLostIsHandedOverAgainAfterTwoRounds) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(sighups, 1);
  // slurmctld restarted and took an older report from slurmd: only the padding type.
  slurm->follows_file = false;
  slurm->configured = {{"free", 14}};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(sighups, 1) << "one round's disagreement may be a handover in flight";
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r);
  EXPECT_EQ(sighups, 2);
  EXPECT_NE(std::ranges::find(r->notes, "slurmctld's split differs from the advertisement: handed over again"),
            r->notes.end());
  // Once slurmctld agrees, nothing more is sent.
  slurm->follows_file = true;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(sighups, 2);
}

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
  EXPECT_EQ(advertised_counts(*store->load()), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));

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

// Demand for a 7g while the idle layout is advertised: the round first shrinks the advertisement,
// waits for slurmctld to take it, then grows into a plan that serves the 7g.
TEST_F(NodeFlows, DemandShiftShrinksFirstThenGrowsAfterSlurmConfirms) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->configured = advertised();  // what slurmctld holds from the first round
  slurm->polls_until_adopt = 3;      // it takes a few polls to see the SIGHUPed registration
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_GE(slurm->polls, 4);
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"7g.80gb", 2}}));
  EXPECT_EQ(sighups, 3);  // initial, shrink, grow
}

// A starving request drains a GPU of the node for itself, unless it waits in a reservation the
// demand publisher booked for it: Slurm then holds the chosen nodes, and no node drains as well.
TEST_F(NodeFlows, AJobInOurWideReservationDrainsNothingOfItsOwn) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  clock = *parse_slurm_time("2027-01-15T08:10:00");  // waited 600 s, past starvation_s
  auto starving_notes = [&] {
    auto r = run_planner_round(ctx, planner);
    EXPECT_TRUE(r) << r.error().message;
    return r ? std::ranges::count_if(r->notes, [](const std::string& n) { return n.starts_with("starving"); }) : -1;
  };
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:3|1|ann|1:00:00|(null)\n";
  EXPECT_GE(starving_notes(), 1) << "three whole GPUs on a node of two: it starves and drains";
  slurm->squeue =
      "100|gpu|1000|2027-01-15T08:00:00|Reservation|gres:vgpu:7g.80gb:3|1|ann|1:00:00|vgpu-wide-100\n";
  slurm->reservations["vgpu-wide-100"] = "n[2-3]";
  EXPECT_EQ(starving_notes(), 0) << "the reservation holds n2 and n3, not this node";
  EXPECT_EQ(advertised()["7g.80gb"], 2) << "its demand is still planned: waiting for our reservation is waiting";
  EXPECT_EQ(starving_notes(), 0);
  EXPECT_EQ(slurm->reservation_queries, 1) << "a reservation's nodes are asked once";
}

// On a node of the reservation, the job is served first and drains what it needs: Slurm starts
// nothing there that would run across the reservation's start, and the sticky plan (which counts
// small slots as more demand served) must not keep the node from reshaping for it.
TEST_F(NodeFlows, OnANodeOfOurWideReservationTheJobIsServedFirst) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  clock = *parse_slurm_time("2027-01-15T08:10:00");
  slurm->squeue = "90|gpu|2000|2027-01-15T08:09:30|Priority|gres:vgpu:1g.10gb:7|1|bo|1:00|(null)\n"
                  "91|gpu|2000|2027-01-15T08:09:30|Priority|gres:vgpu:1g.10gb:7|1|bo|1:00|(null)\n";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["1g.10gb"], 14);
  slurm->squeue += "100|gpu|1000|2027-01-15T08:00:00|Reservation|gres:vgpu:7g.80gb:2|1|ann|1:00:00|vgpu-wide-100\n";
  slurm->reservations["vgpu-wide-100"] = "n[1-2]";
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(advertised()["7g.80gb"], 2) << "fourteen small slots served more units; the reserved job comes first";
  slurm->reservations.clear();  // asked once: a later failure to ask again changes nothing
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["7g.80gb"], 2);
}

// A reservation the planner cannot look up is not held for, and it asks again next round.
TEST_F(NodeFlows, AnUnknownWideReservationIsAskedAgain) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  clock = *parse_slurm_time("2027-01-15T08:10:00");
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Reservation|gres:vgpu:7g.80gb:3|1|ann|1:00|vgpu-wide-100\n";
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::ranges::any_of(r->notes, [](const std::string& n) {
    return n.starts_with("reservation vgpu-wide-100: no reservation vgpu-wide-100; asked again");
  }));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->reservation_queries, 2);
}

// The race the handover exists for: Slurm allocated a 1g under the old plan, and its prolog
// runs while the planner is shrinking. The dropped slot is still claimable, and the shrink is not
// confirmed until the allocation has its claim.
TEST_F(NodeFlows, JobAllocatedUnderTheOldPlanStillFindsItsSlot) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->used = {{"1g.10gb", 1}};  // allocated, prolog not yet run
  ctx.confirm_timeout_ms = 50;
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->shrink_confirmed);
  auto pro = run_prolog(ctx, {55, "erin", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  ASSERT_EQ(pro->instances.size(), 1u);
  ctx.confirm_timeout_ms = 2000;
  auto r2 = run_planner_round(ctx, planner);
  ASSERT_TRUE(r2);
  EXPECT_TRUE(r2->shrink_confirmed);
  // The 1g keeps running on one GPU; the other, whole GPU now serves a 7g.
  auto ad = advertised();
  EXPECT_GE(ad["1g.10gb"], 1);
  EXPECT_EQ(ad["7g.80gb"], 1);
  ASSERT_EQ(backend.instances().size(), 1u);
  EXPECT_EQ(backend.instances()[0].mig_uuid, pro->instances[0].mig_uuid);
}

// The same race with the prolog inside the planner's wait (a served hook, as on a real node): the
// shrink hands Slurm the split that keeps the claimed slot and is confirmed in that round, so Slurm
// never shows the 1g below what its running job holds for longer than one poll.
TEST_F(NodeFlows, AClaimDuringTheShrinkIsHandedToSlurmWithinTheSameRound) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2\n";
  slurm->used = {{"1g.10gb", 1}};  // allocated, prolog not yet run
  std::optional<Result<PrologResult>> pro;
  ctx.serve_waiting_hooks = [&] {
    if (!pro) pro = run_prolog(ctx, {55, "erin", "gpu", "1g.10gb:1", std::nullopt});
  };
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(pro && *pro) << "the prolog ran inside the wait";
  ASSERT_FALSE((*pro)->rejected) << (*pro)->reason;
  EXPECT_TRUE(r->shrink_confirmed) << "confirmed in the round whose shrink the claim changed";
  auto ad = advertised();
  EXPECT_GE(ad["1g.10gb"], 1);
  EXPECT_EQ(ad["7g.80gb"], 1);
}

// Once demand is served the plan stays put: no round changes the advertisement again (a plan
// that re-placed kept slots every round made Slurm's view chase the file forever). With nothing
// pending any more, the node goes back to its idle layout once, then stays there.
TEST_F(NodeFlows, PlanIsStableOnceDemandIsServed) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto idle = advertised();
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:1\n"
                  "99|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:1g.10gb:1\n";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(advertised()["7g.80gb"], 1);
  int before = sighups;
  for (int i = 0; i < 4; ++i) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->advertisement_changed) << "round " << i << " with the same demand";
  }
  EXPECT_EQ(sighups, before);
  slurm->squeue = "";  // the jobs went away without taking their slots
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised(), idle);
  before = sighups;
  for (int i = 0; i < 4; ++i) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->advertisement_changed) << "round " << i;
  }
  EXPECT_EQ(sighups, before);
  // New demand that the kept slots cannot serve reshapes again.
  slurm->squeue = "101|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:1g.10gb:7\n";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_GE(advertised()["1g.10gb"], 7);
}

TEST_F(NodeFlows, LostLedgerIsRebuiltAndRunningJobsReadopted) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {9, "frank", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  fs::remove(dir / "n1" / "ledger.json");
  auto l = ensure_ledger(ctx);
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->instances.size(), 1u);
  EXPECT_EQ(l->instances[0].job, 9u);
  EXPECT_FALSE(l->instances[0].orphaned);
  // The epilog still finds and releases it (scrubbed, kept idle at its slot).
  auto epi = run_epilog(ctx, 9, "completed");
  ASSERT_TRUE(epi);
  EXPECT_EQ(epi->kept + epi->destroyed, 1);
  EXPECT_TRUE(instances_of_job(*store->load(), 9).empty());
}

TEST_F(NodeFlows, CorruptLedgerIsSetAsideAndOrphansAreScrubbedThenDestroyed) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(backend.create_instance(1, 9, {0, 4}));  // on the hardware, owner unknown
  { std::ofstream(dir / "n1" / "ledger.json") << "{ torn"; }
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_EQ(scrubber.scrubbed.size(), 1u);
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(dir / "n1"))
    set_aside |= e.path().filename().string().starts_with("ledger.json.corrupt-");
  EXPECT_TRUE(set_aside);
}

TEST_F(NodeFlows, RequiredScrubThatCannotRunQuarantines) {
  policy.partitions[0].scrub = ScrubMode::required;
  scrubber.status = ScrubStatus::unavailable;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_FALSE(run_prolog(ctx, {11, "gina", "gpu", "3g.40gb:1", std::nullopt})->rejected);
  auto epi = run_epilog(ctx, 11, "completed");
  ASSERT_TRUE(epi);
  EXPECT_EQ(epi->quarantined, 1);
  EXPECT_EQ(backend.instances().size(), 1u);  // kept, never handed out
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto l = store->load();
  ASSERT_EQ(l->instances.size(), 1u);
  EXPECT_EQ(l->instances[0].state, InstanceState::quarantined);
  const auto& q = l->instances[0];
  for (const auto& s : l->plan.slots)
    EXPECT_FALSE(s.gpu == q.gpu && (s.placement.mask() & q.placement.mask())) << "nothing planned over it";
  EXPECT_NE(all_logs().find("QUARANTINED"), std::string::npos);
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
  EXPECT_EQ(advertised_counts(*store->load()), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
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
  EXPECT_EQ(advertised_counts(*store->load()), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
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

TEST_F(NodeFlows, JobRecordOfAnEpilogKilledAfterRetiringIsDroppedOnceTheJobIsGone) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  // Every epilog attempt died right after retiring the instances: ownerless in the ledger, the
  // job record still there.
  ASSERT_TRUE(store->update([&](Ledger& l) -> Result<void> {
    retire_job(l, 42, clock, "completed");
    return {};
  }));
  ASSERT_TRUE(fs::exists(dir / "n1" / "jobs" / "42.json"));
  slurm->running = {};  // Slurm no longer runs it here
  ASSERT_TRUE(run_planner_round(ctx, planner));
  clock += planner.ended_job_check_s;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(fs::exists(dir / "n1" / "jobs" / "42.json"));
  EXPECT_TRUE(instances_of_job(*store->load(), 42).empty());
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

TEST_F(NodeFlows, LeakedUnclaimedInstanceIsDestroyedByTheNextRound) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(backend.create_instance(0, 19, {6, 1}));
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r);
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_NE(all_logs().find("leaked instance"), std::string::npos);
}

// A prolog that creates and records its instance while the planner reconciles (after the
// planner's snapshot of the GPUs, before its ledger read) must not have that instance taken for
// vanished or leaked. The soak once lost a job's instance this way. The reconcile holds the
// hardware lock, so the prolog waits for it.
TEST_F(NodeFlows, ReconcileNeverActsOnAnInstanceAPrologIsCreating) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->running = {42};
  NodeContext prolog_ctx = ctx;
  std::mutex log_mutex;
  std::vector<std::string> prolog_logs;
  prolog_ctx.log = [&](const std::string& s) {
    std::lock_guard g(log_mutex);
    prolog_logs.push_back(s);
  };
  std::atomic<bool> started{false}, done{false};
  std::thread prolog;
  Result<PrologResult> pro = fail(ErrorCode::io, "prolog did not run");
  backend.after_list = [&](int gpu) {
    if (gpu != 1 || started.exchange(true)) return;
    prolog = std::thread([&] {
      pro = run_prolog(prolog_ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
      done = true;
    });
    // Give the prolog every chance to finish inside the planner's reconcile.
    for (int i = 0; i < 100 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  auto round = run_planner_round(ctx, planner);
  prolog.join();
  backend.after_list = nullptr;
  ASSERT_TRUE(round) << round.error().message;
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  ASSERT_EQ(pro->instances.size(), 1u);

  EXPECT_EQ(backend.instances().size(), 1u);
  auto ledger = store->load();
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->instances.size(), 1u);
  EXPECT_EQ(ledger->instances[0].job, JobId{42});
  EXPECT_EQ(ledger->instances[0].mig_uuid, pro->instances[0].mig_uuid);
  EXPECT_EQ(all_logs().find("vanished"), std::string::npos) << all_logs();
  EXPECT_EQ(all_logs().find("leaked"), std::string::npos) << all_logs();
  // And the next round, with nobody racing, finds the node consistent.
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

// A restarted slurmctld forgets running jobs' typed allocations (docs/reliability-soak.md,
// finding 1) and would start a second job on instances a job here holds, which that job's
// prolog must then cancel. The planner keeps such instances out of the advertisement until their
// job ends; one odd answer from Slurm changes nothing.
TEST_F(NodeFlows, InstancesARestartedSlurmctldForgotLeaveTheAdvertisementUntilTheirJobEnds) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {7, "alice", "gpu", "2g.20gb:2", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const int offered = advertised()["2g.20gb"];  // job 7's two and any planned slots
  ASSERT_GE(offered, 2);

  slurm->ledger = nullptr;  // slurmctld restarted: GresUsed no longer counts job 7
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["2g.20gb"], offered) << "changed on one observation";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["2g.20gb"], offered - 2) << "Slurm could hand job 7's instances out again";
  EXPECT_NE(all_logs().find("slurmctld does not count instances jobs here hold (2g.20gb:2;"), std::string::npos)
      << all_logs();
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
  // The instances stay with their job; nothing on the hardware changes.
  EXPECT_EQ(backend.instances().size(), 2u);

  // Once the job is gone, its capacity comes back.
  ASSERT_TRUE(run_epilog(ctx, 7, "completed"));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_GE(advertised()["2g.20gb"], 2);
  EXPECT_TRUE(planner.slurm_uncounted.empty());
  EXPECT_NE(all_logs().find("slurmctld counts every instance jobs here hold again"), std::string::npos);
  problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

// An instance that vanished from the hardware under a job still ends in the history, so the
// history accounts for every instance a prolog made.
TEST_F(NodeFlows, InstanceVanishedUnderAJobIsForgottenWithAHistoryRecord) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->running = {42};
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  ASSERT_TRUE(backend.destroy_instance(pro->instances[0].gpu, pro->instances[0].gpu_instance_id));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(store->load()->instances.empty());
  auto history = store->history();
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].job, JobId{42});
  EXPECT_EQ((*history)[0].mig_uuid, pro->instances[0].mig_uuid);
  EXPECT_EQ((*history)[0].end_reason, "vanished");
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

// A job's end leaves its place in the plan (a backed slot): the advertisement does not change,
// so Slurm may start the next job of that profile there at once. The space goes to another
// profile only through the handover: shrink, slurmctld takes it, then grow.
TEST_F(NodeFlows, ReleasedCapacityIsOfferedAgainOnlyAfterSlurmTookTheShrink) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {7, "alice", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto before = advertised();
  const int published = sighups;
  slurm->used.clear();
  ASSERT_TRUE(run_epilog(ctx, 7, "completed"));
  EXPECT_EQ(advertised_counts(*store->load()), before) << "a job's end changed Slurm's count";
  EXPECT_EQ(sighups, published);
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:4g.40gb:1\n";
  slurm->configured = before;            // slurmctld holds the current split
  slurm->polls_until_adopt = 1'000'000;  // and does not take a new one
  ctx.confirm_timeout_ms = 50;
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["4g.40gb"], 0) << "grew before Slurm took the shrink";
  slurm->polls_until_adopt = 0;
  r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["4g.40gb"], 1);
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

// Back to idle from a layout the idle one only partly overlaps: the handover must land on the
// idle layout and stay (growing by re-planning around the kept slots put a dropped slot back,
// and every round dropped it again).
TEST_F(NodeFlows, ReturnToTheIdleLayoutSettlesInsteadOfChurning) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto idle = advertised();
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:2g.20gb:6\n";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_GE(advertised()["2g.20gb"], 6);
  slurm->squeue = "";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised(), idle);
  const auto generation = store->load()->plan.generation;
  for (int i = 0; i < 4; ++i) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->advertisement_changed) << "round " << i;
  }
  EXPECT_EQ(store->load()->plan.generation, generation);
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

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
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{filled[0]}) << "the former tenant's instance was scrubbed first";
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
  EXPECT_TRUE(std::ranges::any_of(l->instances, [](const LedgerInstance& i) { return i.state == InstanceState::quarantined; }));
  EXPECT_TRUE(validate(*l));
}

// A planner killed while slurmctld had not yet taken a shrink (here: a quarantined instance's
// place left the advertisement) must not, once restarted, offer that space as other profiles:
// its memory of the shrink is gone, but slurmctld's view still shows the old count.
TEST_F(NodeFlows, RestartedPlannerWaitsForAShrinkItsPredecessorPublished) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {7, "alice", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  ASSERT_TRUE(run_planner_round(ctx, planner));
  slurm->used.clear();
  scrubber.status = ScrubStatus::failed;
  ASSERT_TRUE(run_epilog(ctx, 7, "completed"));
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:1g.10gb:7\n";
  slurm->follows_file = false;  // slurmctld keeps the count it had
  ctx.confirm_timeout_ms = 20;
  const auto slurm_before = slurm->configured = advertised();
  PlannerState first_life;
  auto r = run_planner_round(ctx, first_life);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->shrink_confirmed);
  EXPECT_LT(advertised()["3g.40gb"], slurm_before.at("3g.40gb")) << "the shrink is published";
  const auto shrunk = advertised();
  const int notices = sighups;
  PlannerState second_life;  // killed and restarted: the file already says what it published
  r = run_planner_round(ctx, second_life);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->shrink_confirmed);
  EXPECT_EQ(advertised(), shrunk) << "grew before slurmctld took the shrink";
  EXPECT_GT(sighups, notices) << "slurmctld is told again";
  slurm->follows_file = true;
  r = run_planner_round(ctx, second_life);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_GT(advertised()["1g.10gb"], shrunk.at("1g.10gb"));
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

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

// A scrubbed instance stays where it was, idle, and the next job of its profile takes it: no MIG
// change on that job's way to its first command (on an H100 a create takes seconds), one ledger
// write for the prolog, and Slurm's counts never moved.
TEST_F(NodeFlows, NextJobOfTheProfileTakesTheScrubbedInstanceWithoutCreatingOne) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto first = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(first && !first->rejected);
  std::vector<std::string> uuids{first->instances[0].mig_uuid, first->instances[1].mig_uuid};
  ASSERT_TRUE(run_epilog(ctx, 42, "completed"));
  const int creates = backend.creates;
  const int destroys = backend.destroys;
  auto next = run_prolog(ctx, {43, "bob", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_FALSE(next->rejected) << next->reason;
  EXPECT_EQ(backend.creates, creates);
  EXPECT_EQ(backend.destroys, destroys);
  ASSERT_EQ(next->instances.size(), 2u);
  std::vector<std::string> got{next->instances[0].mig_uuid, next->instances[1].mig_uuid};
  std::ranges::sort(uuids);
  std::ranges::sort(got);
  EXPECT_EQ(got, uuids);
  auto l = store->load();
  ASSERT_TRUE(l);
  for (const auto* inst : instances_of_job(*l, 43)) {
    EXPECT_EQ(inst->user, "bob");
    EXPECT_EQ(inst->state, InstanceState::ready);
  }
  EXPECT_TRUE(std::ranges::none_of(slot_backings(*l), [](const auto& b) { return b.has_value(); }));
  auto j = nlohmann::json::parse(std::ifstream(dir / "n1" / "jobs" / "43.json"));
  ASSERT_EQ(j["instances"].size(), 2u);
  EXPECT_EQ(advertised_counts(*l), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
  // A job of another profile is not given them.
  auto other = run_prolog(ctx, {44, "carol", "gpu", "2g.20gb:1", std::nullopt});
  ASSERT_TRUE(other && !other->rejected);
  EXPECT_EQ(backend.creates, creates + 1);
}

// Only a scrub that ran earns a second tenant: with the scrub unavailable (policy "optional") the
// instance is destroyed as before.
TEST_F(NodeFlows, InstanceWhoseScrubWasUnavailableIsDestroyedNotKept) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", std::nullopt}));
  scrubber.status = ScrubStatus::unavailable;
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(epi->kept, 0);
  EXPECT_EQ(epi->destroyed, 2);
  EXPECT_TRUE(backend.instances().empty());
}

// Holds an instance's cleanup lock as another process scrubbing it would (node_lock.h).
class HeldCleanupLock {
 public:
  HeldCleanupLock(const NodeContext& ctx, const LedgerInstance& inst)
      : fd_(::open(fmt::format("{}/cleanup-{}-{}.lock", ctx.node_dir(), inst.gpu, inst.gpu_instance_id).c_str(),
                   O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::flock(fd_, LOCK_EX), 0);
  }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  ~HeldCleanupLock() { release(); }
  HeldCleanupLock(const HeldCleanupLock&) = delete;
  HeldCleanupLock& operator=(const HeldCleanupLock&) = delete;

 private:
  int fd_;
};

const LedgerInstance& only_instance_of(const Ledger& l, JobId job) {
  const auto mine = instances_of_job(l, job);
  EXPECT_EQ(mine.size(), 1u);
  return *mine.at(0);
}

// Jobs 42 and 43 each hold a 1g.10gb; job 42's epilog has released its instance (scrubbing) and
// not yet cleaned it. Returns their instances as they were before the release.
std::pair<LedgerInstance, LedgerInstance> job_42_released_and_43_running(NodeContext& ctx, LedgerStore& store) {
  EXPECT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt}));
  EXPECT_TRUE(run_prolog(ctx, {43, "bob", "gpu", "1g.10gb:1", std::nullopt}));
  auto before = store.load();
  if (!before) {  // a helper cannot ASSERT; never read an absent ledger
    ADD_FAILURE() << "ledger: " << before.error().message;
    return {};
  }
  std::pair<LedgerInstance, LedgerInstance> both{only_instance_of(*before, 42), only_instance_of(*before, 43)};
  EXPECT_TRUE(store.update([](Ledger& l) -> Result<void> {
    retire_job(l, 42, 1'800'000'100, "completed");
    return {};
  }));
  return both;
}

// An epilog scrubs its own job's instances; one another process is working on is left to it, and
// the planner's next round finishes it once that process is gone.
TEST_F(NodeFlows, AnEpilogLeavesAReleasedInstanceAnotherProcessIsCleaning) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto [of42, of43] = job_42_released_and_43_running(ctx, *store);
  HeldCleanupLock other_epilog(ctx, of42);
  auto epi = run_epilog(ctx, 43, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of43.mig_uuid});
  EXPECT_EQ(epi->kept, 1);
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_EQ(std::ranges::count_if(l->instances, [](const LedgerInstance& i) { return is_released(i); }), 1);
  other_epilog.release();  // it died before scrubbing
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(scrubber.scrubbed, (std::vector<std::string>{of43.mig_uuid, of42.mig_uuid}));
  l = store->load();
  ASSERT_TRUE(l);
  EXPECT_TRUE(std::ranges::none_of(l->instances, [](const LedgerInstance& i) { return is_released(i); }));
}

// A cleanup lock that cannot be opened (here a directory in its place): the pass says which and
// leaves that instance released for a later one; the epilog's own job is still cleaned.
TEST_F(NodeFlows, AReleasedInstanceWhoseCleanupLockCannotBeOpenedIsReportedAndKeptForLater) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto [of42, of43] = job_42_released_and_43_running(ctx, *store);
  const auto in_the_way = fmt::format("{}/cleanup-{}-{}.lock", ctx.node_dir(), of42.gpu, of42.gpu_instance_id);
  ASSERT_TRUE(std::filesystem::create_directory(in_the_way));
  auto epi = run_epilog(ctx, 43, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of43.mig_uuid});
  ASSERT_EQ(epi->problems.size(), 1u);
  EXPECT_NE(epi->problems[0].find(of42.mig_uuid), std::string::npos) << epi->problems[0];
  EXPECT_NE(epi->problems[0].find("cannot open its cleanup lock " + in_the_way), std::string::npos) << epi->problems[0];
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_EQ(std::ranges::count_if(l->instances, [](const LedgerInstance& i) { return is_released(i); }), 1);
  std::filesystem::remove(in_the_way);
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(scrubber.scrubbed, (std::vector<std::string>{of43.mig_uuid, of42.mig_uuid}));
}

// A prolog whose claim stands on an instance another process is scrubbing waits for that process,
// then finishes what it left (here: everything, it died) and starts its job there.
TEST_F(NodeFlows, APrologOnAReleasedSlotWaitsForTheProcessCleaningIt) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  for (JobId job = 20; job < 22; ++job)  // every 3g.40gb slot of the idle layout
    ASSERT_TRUE(run_prolog(ctx, {job, "alice", "gpu", "3g.40gb:1", std::nullopt}));
  auto before = store->load();
  ASSERT_TRUE(before);
  const LedgerInstance of20 = only_instance_of(*before, 20);
  ASSERT_TRUE(store->update([](Ledger& l) -> Result<void> {
    retire_job(l, 20, 1'800'000'100, "completed");
    return {};
  }));
  auto holder = std::make_unique<HeldCleanupLock>(ctx, of20);
  auto next = std::async(std::launch::async, [&] { return run_prolog(ctx, {30, "bob", "gpu", "3g.40gb:1", std::nullopt}); });
  EXPECT_EQ(next.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "it waits for the holder";
  EXPECT_TRUE(scrubber.scrubbed.empty());
  holder.reset();
  auto pro = next.get();
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of20.mig_uuid});
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_EQ(instances_of_job(*l, 30).size(), 1u);
}

// The hand-off as the cleanup process gets it: a copy of each lock's descriptor (the same open
// file, as a child inherits it) that outlives the epilog's own.
class RecordingHandoff final : public CleanupHandoff {
 public:
  explicit RecordingHandoff(const NodeContext& ctx) : ctx_(ctx) {}
  ~RecordingHandoff() override {
    for (const auto& h : taken) ::close(h.lock_fd);
  }
  Result<void> hand_off(const std::vector<HeldCleanup>& held) override {
    if (!refusal.empty()) return fail(ErrorCode::unavailable, refusal);
    for (const auto& h : held) {
      const auto path = fmt::format("{}/cleanup-{}-{}.lock", ctx_.node_dir(), h.gpu, h.gpu_instance_id);
      const int other = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0) << path << " is handed over held";
      ::close(other);
      taken.push_back({h.gpu, h.gpu_instance_id, ::dup(h.lock_fd)});
    }
    return {};
  }
  std::vector<HeldCleanup> taken;
  std::string refusal;

 private:
  const NodeContext& ctx_;
};

// VGPU_SCRUB_AFTER_EPILOG: the epilog releases the job's instance and returns without scrubbing
// it; until the cleanup process has, nothing else touches it (a planner round leaves it alone),
// and the cleanup process then scrubs it and keeps it idle for the next job, as an epilog would.
TEST_F(NodeFlows, AnEpilogHandsItsScrubToTheCleanupProcessAndReturns) {
  RecordingHandoff handoff(ctx);
  ctx.cleanup_handoff = &handoff;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt}));
  const LedgerInstance of42 = only_instance_of(*store->load(), 42);
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(epi->handed_off, 1);
  EXPECT_EQ(epi->kept, 0);
  EXPECT_TRUE(scrubber.scrubbed.empty()) << "the epilog did not wait for the scrub";
  ASSERT_EQ(handoff.taken.size(), 1u);
  EXPECT_EQ(handoff.taken[0].gpu, of42.gpu);
  EXPECT_EQ(handoff.taken[0].gpu_instance_id, of42.gpu_instance_id);
  EXPECT_NE(all_logs().find("vgpu: epilog: job 42: 1 instance(s) released, 1 handed to a cleanup process"),
            std::string::npos) << all_logs();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(scrubber.scrubbed.empty()) << "a planner round does not take a handed-off instance";
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_EQ(std::ranges::count_if(l->instances, [](const LedgerInstance& i) { return is_released(i); }), 1);

  auto done = finish_handed_off_instances(ctx, handoff.taken);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->problems.empty()) << done->problems.front();
  EXPECT_EQ(done->kept, 1);
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of42.mig_uuid});
  l = store->load();
  ASSERT_TRUE(l);
  EXPECT_TRUE(std::ranges::none_of(l->instances, [](const LedgerInstance& i) { return is_released(i); }));
}

// A hand-off that fails (the program cannot start) costs the job nothing: the epilog says why and
// cleans up itself, as without the setting.
TEST_F(NodeFlows, AnEpilogWhoseHandOffFailsCleansUpItself) {
  RecordingHandoff handoff(ctx);
  handoff.refusal = "cleanup process /proc/self/exe: cannot start it: Resource temporarily unavailable";
  ctx.cleanup_handoff = &handoff;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt}));
  const LedgerInstance of42 = only_instance_of(*store->load(), 42);
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(epi->handed_off, 0);
  EXPECT_EQ(epi->kept, 1);
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of42.mig_uuid});
  EXPECT_NE(all_logs().find("vgpu: epilog: job 42: handing 1 instance(s) to a cleanup process: " + handoff.refusal +
                            "; cleaning up here"), std::string::npos) << all_logs();
}

// The cleanup process trusts only a descriptor that holds its instance's lock file: another one is
// reported, and the instance is cleaned like any other whose lock is free.
TEST_F(NodeFlows, TheCleanupProcessReportsADescriptorThatDoesNotHoldTheLock) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const auto [of42, of43] = job_42_released_and_43_running(ctx, *store);
  const int not_the_lock = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(not_the_lock, 0);
  auto done = finish_handed_off_instances(ctx, {{of42.gpu, of42.gpu_instance_id, not_the_lock}});
  ::close(not_the_lock);
  ASSERT_TRUE(done) << done.error().message;
  ASSERT_FALSE(done->problems.empty());
  EXPECT_NE(done->problems[0].find(fmt::format("descriptor {} does not hold {}/cleanup-{}-{}.lock", not_the_lock,
                                               ctx.node_dir(), of42.gpu, of42.gpu_instance_id)),
            std::string::npos) << done->problems[0];
  EXPECT_EQ(scrubber.scrubbed, std::vector<std::string>{of42.mig_uuid});
  EXPECT_EQ(done->kept, 1);
}

// Two jobs' epilogs, as slurmd runs them (two processes, each with its own ledger store): their
// scrubs run at the same time, not one behind the other (0.7 s each on an H100).
TEST_F(NodeFlows, TheEpilogsOfTwoJobsScrubAtTheSameTime) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt}));
  ASSERT_TRUE(run_prolog(ctx, {43, "bob", "gpu", "1g.10gb:1", std::nullopt}));
  std::atomic<int> scrubbing{0}, most{0};
  auto overlapping = [&](const std::string&) {
    const int now = ++scrubbing;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    --scrubbing;
  };
  scrubber.on_scrub = overlapping;
  testing::ScriptedScrubber other_scrubber;
  other_scrubber.on_scrub = overlapping;
  LedgerStore other_store((dir / "n1").string());
  NodeContext other = ctx;
  other.ledger = &other_store;
  other.scrubber = &other_scrubber;
  other.log = [](const std::string&) {};
  auto first = std::async(std::launch::async, [&] { return run_epilog(ctx, 42, "completed"); });
  auto second = std::async(std::launch::async, [&] { return run_epilog(other, 43, "completed"); });
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->kept + b->kept, 2);
  EXPECT_EQ(scrubber.scrubbed.size() + other_scrubber.scrubbed.size(), 2u);
  EXPECT_EQ(most.load(), 2) << "the second scrub started before the first ended";
}

// Idle instances do not pin the layout: demand their place cannot serve makes the planner destroy
// them first (never one whose slot a job claimed), then move the plan as usual.
TEST_F(NodeFlows, PlannerDestroysIdleInstancesTheNewPlanHasNoPlaceFor) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  std::vector<JobId> jobs;
  for (JobId job = 50; job < 54; ++job) {  // every slot of the idle layout on both GPUs, 1g.10gb
    auto pro = run_prolog(ctx, {job, "alice", "gpu", "1g.10gb:1", std::nullopt});
    ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
  }
  for (JobId job = 50; job < 54; ++job) ASSERT_TRUE(run_epilog(ctx, job, "completed"));
  ASSERT_EQ(backend.instances().size(), 4u);
  // Job 60 has claimed one idle instance's slot (Slurm allocated it) but its prolog has not run.
  ASSERT_TRUE(store->update([](Ledger& l) { return claim_slots(l, 60, "1g.10gb", 1); }));
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:1\n";
  for (int round = 0; round < 6 && advertised()["7g.80gb"] == 0; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["7g.80gb"], 1);
  auto l = store->load();
  ASSERT_TRUE(l);
  ASSERT_TRUE(validate(*l));
  // The claimed one was left alone, and its job still gets it.
  auto pro = run_prolog(ctx, {60, "bob", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
  l = store->load();
  const auto backing = slot_backings(*l);
  for (std::size_t n = 0; n < l->instances.size(); ++n) {
    if (is_idle(l->instances[n])) {
      EXPECT_NE(std::ranges::find(backing, n), backing.end()) << "an idle instance with no slot";
    }
  }
  EXPECT_GT(backend.destroys, 0);
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

// With planner.node_weights the node is lighter in slurmctld while Slurm has any of its vgpu
// allocated, so Slurm packs small jobs onto it, and heavier again once idle (node_weight.h).
TEST_F(NodeFlows, NodeWeightFollowsWhetherSlurmHasVgpuAllocatedHere) {
  auto has_note = [](const PlannerRoundResult& r, const std::string& text) {
    return std::ranges::any_of(r.notes, [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(slurm->weight_updates.empty());  // off by default: the weight is the admin's
  policy.planner.node_weights = PlannerKnobs::NodeWeights{10, 20};
  auto round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(slurm->weight, 20u);
  EXPECT_TRUE(has_note(*round, "node weight 1 -> 20 (no vgpu allocated here)"));

  slurm->used["1g.10gb"] = 1;  // Slurm allocated job 42; its prolog has not run yet
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round);
  EXPECT_EQ(slurm->weight, 10u);
  EXPECT_TRUE(has_note(*round, "node weight 20 -> 10 (vgpu allocated here)"));
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  const auto sent = slurm->weight_updates.size();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->weight_updates.size(), sent);  // already right: nothing sent

  // slurmctld restarted (or, from 23.11, reconfigured): slurm.conf's weight is back, and it no
  // longer counts the running job's typed allocation. The ledger still says the node is in use.
  slurm->weight = 1;
  slurm->ledger = nullptr;
  slurm->used.clear();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->weight, 10u);

  ASSERT_TRUE(run_epilog(ctx, 42, "completed"));
  slurm->used.clear();
  slurm->weight_refusal = "scontrol: error: Invalid node name specified";
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;  // a refused update never fails the round
  EXPECT_EQ(slurm->weight, 10u);
  EXPECT_TRUE(has_note(*round, "node weight: cannot set 20 (no vgpu allocated here): scontrol: error: Invalid node name"));
  slurm->weight_refusal.clear();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->weight, 20u);
}

// With planner.node_weights by free capacity the weight follows what the node's GPUs have left:
// Slurm tries the fullest nodes first (node_weight.h). Two idle H100s: 100 + 2 x 700.
TEST_F(NodeFlows, NodeWeightByFreeCapacityFollowsWhatTheJobsHold) {
  PlannerKnobs::NodeWeights by_free;
  by_free.base = 100;
  by_free.per_free_gpu = 700;
  policy.planner.node_weights = by_free;
  auto round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(slurm->weight, 1500u);
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round);
  EXPECT_EQ(slurm->weight, 1400u) << "one of 14 slices held";
  std::string notes;
  for (const auto& n : round->notes) notes += n + "; ";
  EXPECT_NE(notes.find("node weight 1500 -> 1400 (1.86 GPU(s) free)"), std::string::npos) << notes;
  ASSERT_TRUE(run_epilog(ctx, 42, "completed"));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->weight, 1500u);
}

// With planner.node_features the node carries vgpu_in_use while Slurm has any of its vgpu
// allocated, and vgpu_partly_used_gpu while a job's 1g.10gb leaves its GPU room (node_features.h),
// beside the administrator's own features, and loses them when idle.
TEST_F(NodeFlows, NodeFeaturesFollowWhetherSlurmHasVgpuAllocatedHere) {
  auto has_note = [](const PlannerRoundResult& r, const std::string& text) {
    return std::ranges::any_of(r.notes, [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(slurm->feature_updates.empty());  // off by default: the features are the admin's
  policy.planner.node_features = true;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(slurm->feature_updates.empty()) << "idle: slurm.conf's features are already right";

  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  auto round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(*slurm->features, (std::vector<std::string>{"ib", "vgpu_in_use", "vgpu_partly_used_gpu"}));
  EXPECT_TRUE(has_note(*round, "node features ib -> ib,vgpu_in_use,vgpu_partly_used_gpu (vgpu allocated here, "
                               "a GPU idle, a GPU partly used)"));
  const auto sent = slurm->feature_updates.size();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->feature_updates.size(), sent) << "already right: nothing sent";

  slurm->features = std::vector<std::string>{"ib"};  // slurmctld reconfigured: slurm.conf's again
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(*slurm->features, (std::vector<std::string>{"ib", "vgpu_in_use", "vgpu_partly_used_gpu"}));

  ASSERT_TRUE(run_epilog(ctx, 42, "completed"));
  slurm->used.clear();
  slurm->feature_refusal = "scontrol: error: Invalid node name specified";
  round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;  // a refused update never fails the round
  EXPECT_TRUE(has_note(*round, "node features: cannot set ib (no vgpu allocated here, a GPU idle, no GPU partly used): scontrol: error"));
  slurm->feature_refusal.clear();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(*slurm->features, (std::vector<std::string>{"ib"}));
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

// Prepared instances do not pin the layout: demand they cannot serve moves the plan, their
// instances are destroyed in the same round, and the new plan's slots are prepared in turn.
TEST_F(NodeFlows, PreparedInstancesMakeWayWhenThePlanMoves) {
  policy.planner.prepare_slots = true;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(backend.instances().size(), 8u);
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:1\n";
  int rounds = 0;
  while (rounds < 6 && advertised()["7g.80gb"] == 0) {
    ASSERT_TRUE(run_planner_round(ctx, planner));
    ++rounds;
  }
  EXPECT_EQ(advertised()["7g.80gb"], 1);
  EXPECT_EQ(rounds, 1) << "the plan moved a round late";
  auto l = store->load();
  ASSERT_TRUE(l);
  const auto backing = slot_backings(*l);
  ASSERT_EQ(backend.instances().size(), l->plan.slots.size()) << "every slot prepared, nothing else left";
  for (const auto& b : backing) EXPECT_TRUE(b.has_value());
  auto pro = run_prolog(ctx, {100, "alice", "gpu", "7g.80gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
  auto problems = verify_node(ctx);
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

namespace vgpu {
namespace {

// Device confinement (docs/security.md): a job's instances open only for its user, from the
// prolog until the epilog takes them back, and an instance kept idle belongs to nobody.
class ConfinedNodeFlows : public NodeFlows {
 protected:
  void SetUp() override {
    NodeFlows::SetUp();
    ctx.access = &access;
  }
  testing::RecordingAccess access;
};

TEST_F(ConfinedNodeFlows, OnlyTheJobsUserCanOpenItsInstancesUntilTheEpilogTakesThemBack) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto first = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", 1001});
  ASSERT_TRUE(first && !first->rejected) << (first ? first->reason : first.error().message);
  ASSERT_EQ(first->instances.size(), 2u);
  for (const auto& inst : first->instances) EXPECT_EQ(access.owner.at(inst.mig_uuid), 1001u) << inst.mig_uuid;
  std::vector<unsigned> owner_while_scrubbed;
  scrubber.on_scrub = [&](const std::string& uuid) { owner_while_scrubbed.push_back(access.owner.at(uuid)); };
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  ASSERT_EQ(epi->kept, 2);
  EXPECT_EQ(owner_while_scrubbed, (std::vector<unsigned>{0, 0}));
  for (const auto& inst : first->instances) EXPECT_EQ(access.owner.at(inst.mig_uuid), 0u);
  // The next tenant of the kept instances gets them, and only they do.
  auto next = run_prolog(ctx, {43, "bob", "gpu", "1g.10gb:2", 1002});
  ASSERT_TRUE(next && !next->rejected);
  for (const auto& inst : next->instances) EXPECT_EQ(access.owner.at(inst.mig_uuid), 1002u);
}

// Scrubs after the epilog: the job's user loses its instances before the epilog returns (Slurm then
// counts the job as ended), not later in the cleanup process.
TEST_F(ConfinedNodeFlows, AnEpilogThatHandsItsScrubOffTakesTheInstancesBackFirst) {
  RecordingHandoff handoff(ctx);
  ctx.cleanup_handoff = &handoff;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto first = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", 1001});
  ASSERT_TRUE(first && !first->rejected) << (first ? first->reason : first.error().message);
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  ASSERT_EQ(epi->handed_off, 2);
  EXPECT_TRUE(scrubber.scrubbed.empty());
  for (const auto& inst : first->instances) EXPECT_EQ(access.owner.at(inst.mig_uuid), 0u) << inst.mig_uuid;
}

// One that cannot be taken back is not handed off: the epilog does the work and quarantines it.
TEST_F(ConfinedNodeFlows, AnInstanceThatCannotBeTakenBackIsNotHandedOff) {
  RecordingHandoff handoff(ctx);
  ctx.cleanup_handoff = &handoff;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto first = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", 1001});
  ASSERT_TRUE(first && !first->rejected) << (first ? first->reason : first.error().message);
  access.fail_revoke = true;
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(epi->handed_off, 0);
  EXPECT_TRUE(handoff.taken.empty());
  EXPECT_EQ(epi->quarantined, 1);
}

// A job whose slots all have a prepared (or kept) instance creates nothing, so its prolog takes
// no hardware lock and never waits behind a create of the planner's (seconds on a real GPU): here
// the lock is held for the whole prolog, which still finishes and grants its instance.
TEST_F(ConfinedNodeFlows, APrologThatCreatesNothingDoesNotWaitForTheHardwareLock) {
  policy.planner.prepare_slots = true;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(backend.instances().size(), 8u);
  const std::string lock_path = ctx.node_dir() + "/hardware.lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::atomic<bool> done{false};
  Result<PrologResult> pro = fail(ErrorCode::io, "not run");
  std::thread prolog([&] {
    pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", 1001});
    done = true;
  });
  for (int i = 0; i < 5000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool finished_under_the_lock = done;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  prolog.join();
  EXPECT_TRUE(finished_under_the_lock) << "the prolog waited for the hardware lock";
  ASSERT_TRUE(pro) << pro.error().message;
  ASSERT_FALSE(pro->rejected) << pro->reason;
  ASSERT_EQ(pro->instances.size(), 1u);
  EXPECT_EQ(access.owner.at(pro->instances[0].mig_uuid), 1001u);
}

TEST_F(ConfinedNodeFlows, PlannerKeepsWhatNoJobHoldsRootsAlone) {
  access.owner["MIG-left-open-before"] = 1001;
  auto first = run_planner_round(ctx, planner);
  ASSERT_TRUE(first);
  EXPECT_EQ(access.owner.at("MIG-left-open-before"), 0u);
  EXPECT_TRUE(std::ranges::any_of(first->notes, [](const std::string& n) {
    return n.find("1 capability file(s) no job holds made root's alone") != std::string::npos;
  }));
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", 1001});
  ASSERT_TRUE(pro && !pro->rejected);
  access.owner["MIG-chmodded-by-an-admin"] = 1002;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(access.owner.at("MIG-chmodded-by-an-admin"), 0u);
  EXPECT_EQ(access.owner.at(pro->instances.at(0).mig_uuid), 1001u) << "a running job's instance stays its user's";
  EXPECT_EQ(access.secure_calls, 3) << "two rounds, and the prolog that created an instance";
}

TEST_F(ConfinedNodeFlows, JobWithoutAUidIsCancelledNotGivenInstancesAnyoneCanOpen) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(pro);
  EXPECT_TRUE(pro->rejected);
  EXPECT_EQ(pro->cancel_class, "confinement");
  EXPECT_NE(pro->reason.find("no SLURM_JOB_UID"), std::string::npos) << pro->reason;
  EXPECT_FALSE(std::filesystem::exists(dir / "n1" / "jobs" / "42.json"));
  ASSERT_TRUE(run_epilog(ctx, 42, "cancelled"));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  EXPECT_TRUE(problems->empty()) << problems->front();
}

TEST_F(ConfinedNodeFlows, InstanceThatCannotBeGivenToTheUserCancelsTheJobWithTheFile) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  access.fail_grant = true;
  auto pro = run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:1", 1001});
  ASSERT_TRUE(pro);
  EXPECT_TRUE(pro->rejected);
  EXPECT_NE(pro->reason.find("giving the instance to uid 1001"), std::string::npos) << pro->reason;
  EXPECT_NE(pro->reason.find("nvidia-cap12"), std::string::npos) << pro->reason;
  EXPECT_FALSE(std::filesystem::exists(dir / "n1" / "jobs" / "42.json"));
  access.fail_grant = false;
  auto epi = run_epilog(ctx, 42, "cancelled");
  ASSERT_TRUE(epi);
  EXPECT_EQ(epi->kept + epi->destroyed, 1);
}

TEST_F(ConfinedNodeFlows, InstanceThatCannotBeTakenBackIsQuarantinedNotKeptForTheNextUser) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_prolog(ctx, {42, "alice", "gpu", "1g.10gb:2", 1001}));
  access.fail_revoke = true;
  auto epi = run_epilog(ctx, 42, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(epi->kept, 0);
  EXPECT_EQ(epi->quarantined, 2);
  EXPECT_TRUE(scrubber.scrubbed.empty());
  EXPECT_NE(all_logs().find("cannot take it back from its last user"), std::string::npos) << all_logs();
}

// `vgpuctl check` run while a handover waits for slurmctld sees an advertisement below the
// ledger; it still reports it (a handover that never ends is a problem) but says it may be one.
TEST_F(NodeFlows, CheckSaysAnAdvertisementBelowTheLedgerMayBeAnOpenHandover) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto full = advertised();
  auto below = full;
  below["1g.10gb"] -= 1;
  ASSERT_TRUE(write_advertisement(ctx, 1, below));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_NE(problems->front().find("a handover may be open"), std::string::npos) << problems->front();

  auto above = full;
  above["1g.10gb"] += 1;
  ASSERT_TRUE(write_advertisement(ctx, 1, above));
  problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_EQ(problems->front().find("handover"), std::string::npos) << "over-advertising is never a handover";
}

}  // namespace
}  // namespace vgpu
