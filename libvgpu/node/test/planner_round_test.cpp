// The planner's round over doubles: the first advertisement, the shrink-confirm-grow handover,
// wide reservations, reconcile with the hardware, node weight and features, prepared slots.
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
  slurm->squeue = "100|gpu|1000|2027-01-15T08:00:00|Reservation|gres:vgpu:7g.80gb:3|1|ann|1:00:00|vgpu-wide-100\n";
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
  slurm->squeue =
      "90|gpu|2000|2027-01-15T08:09:30|Priority|gres:vgpu:1g.10gb:7|1|bo|1:00|(null)\n"
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
  slurm->squeue =
      "100|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:1\n"
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
  clock += policy.planner.idle_return_s;
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
  clock += 5;  // the next round's view of slurmctld is newer than the shrink
  r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_EQ(advertised()["4g.40gb"], 1);
}

// Back to idle from a layout the idle one only partly overlaps: the handover must land on the
// idle layout and stay (growing by re-planning around the kept slots put a dropped slot back,
// and every round dropped it again).
TEST_F(NodeFlows, ReturnToTheIdleLayoutSettlesInsteadOfChurning) {
  policy.planner.idle_return_s = 0;  // back as soon as nothing is pending
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
  clock += 5;  // the next round's view of slurmctld is newer than the handover
  r = run_planner_round(ctx, second_life);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->shrink_confirmed);
  EXPECT_GT(advertised()["1g.10gb"], shrunk.at("1g.10gb"));
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
  EXPECT_TRUE(
      has_note(*round, "node weight: cannot set 20 (no vgpu allocated here): scontrol: error: Invalid node name"));
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
  EXPECT_TRUE(has_note(*round,
                       "node features ib -> ib,vgpu_in_use,vgpu_partly_used_gpu (vgpu allocated here, "
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
  EXPECT_TRUE(has_note(
      *round,
      "node features: cannot set ib (no vgpu allocated here, a GPU idle, no GPU partly used): scontrol: error"));
  slurm->feature_refusal.clear();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(*slurm->features, (std::vector<std::string>{"ib"}));
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

// A GPU found with MIG mode off takes no MIG plan: Slurm is never offered instances its prologs
// cannot create (preparing one would fail with NOT_SUPPORTED). This partition does not offer
// whole.80gb, so the GPU serves nothing here (whole_gpu_flows_test.cpp serves it whole).
// Once MIG is on, the GPU is planned; once it is off again, its unclaimed slots are handed back.
TEST_F(NodeFlows, AGpuWithMigModeOffIsNeverPlannedAsMig) {
  policy.planner.prepare_slots = true;
  backend.mig_off = {1};
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_NE(std::ranges::find(r->notes,
                              "GPU 1 (H100-80GB): MIG mode disabled (pending disabled): planned whole, as "
                              "whole.80gb, where a partition offers it"),
            r->notes.end());
  EXPECT_TRUE(std::ranges::all_of(backend.instances(), [](const InstanceInfo& i) { return i.gpu == 0; }));
  auto l = store->load();
  ASSERT_TRUE(l);
  EXPECT_TRUE(std::ranges::none_of(l->plan.slots, [](const PlanSlot& s) { return s.gpu == 1; }));

  backend.mig_off.clear();
  for (int round = 0; round < 3 && advertised()["3g.40gb"] < 2; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));

  backend.mig_off = {0};
  for (auto& i : std::vector<InstanceInfo>(backend.instances())) {
    if (i.gpu == 0) {
      ASSERT_TRUE(backend.destroy_instance(0, i.gi_id));  // an admin turned MIG off
    }
  }
  for (int round = 0; round < 4 && advertised()["3g.40gb"] > 1; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  l = store->load();
  ASSERT_TRUE(l);
  EXPECT_TRUE(std::ranges::none_of(l->plan.slots, [](const PlanSlot& s) { return s.gpu == 0; }));
  EXPECT_EQ(backend.mig_switches, 0) << "mig_mode as_found (the default) never switches a GPU";
}

// "mig_mode": "partitioned": the planner turns MIG on for a GPU found with it off. While a process
// holds the GPU the driver keeps the switch pending and the GPU is planned as nothing; once it is
// free, the next round switches it and plans it as MIG.
TEST_F(NodeFlows, APartitionedPolicyTurnsMigOnForAGpuFoundWithItOffOnceItIsFree) {
  policy.planner.prepare_slots = true;
  for (auto& p : policy.partitions) p.mig_mode = MigModePolicy::partitioned;
  backend.mig_off = {1};
  backend.busy = {1};
  for (int round = 0; round < 2; ++round) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_NE(std::ranges::find(r->notes,
                                "GPU 1: MIG mode on, as the policy's mig_mode partitioned asks: pending: the GPU is "
                                "in use"),
              r->notes.end())
        << fmt::format("{}", fmt::join(r->notes, "\n"));
    EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  }
  EXPECT_TRUE(backend.mig_off.contains(1));

  backend.busy.clear();
  for (int round = 0; round < 3 && advertised()["3g.40gb"] < 2; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(backend.mig_off.contains(1));
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"1g.10gb", 4}, {"2g.20gb", 2}, {"3g.40gb", 2}}));
  EXPECT_TRUE(std::ranges::any_of(backend.instances(), [](const InstanceInfo& i) { return i.gpu == 1; }));
  const int switches = backend.mig_switches;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(backend.mig_switches, switches) << "a GPU already in MIG mode is not asked again";
}

// A node where no scrub can run (a package built without CUDA) while its partition requires one
// quarantines every released instance; every round says so instead of one quarantine at a time.
TEST_F(NodeFlows, ARoundSaysWhenARequiredScrubCannotRunOnTheNode) {
  scrubber.unavailable = "vgpu-scrub: /usr/libexec/slurm-vgpu/vgpu-scrub: No such file or directory";
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(std::ranges::count_if(r->notes, [](const std::string& n) { return n.starts_with("scrub:"); }), 0)
      << "partition gpu's scrub is optional";
  for (auto& p : policy.partitions) p.scrub = ScrubMode::required;
  r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(
      std::ranges::find(r->notes,
                        "scrub: partition gpu requires it, but vgpu-scrub: /usr/libexec/slurm-vgpu/vgpu-scrub: No "
                        "such file or directory: every instance its jobs release is quarantined (docs/scrub.md)"),
      r->notes.end());
}

// `vgpu-planner --verify` on such a node reports it as a problem, in the round's own words: the
// node's records may all agree while every instance its jobs release is quarantined.
TEST_F(NodeFlows, VerifyReportsARequiredScrubThatCannotRunOnTheNode) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  scrubber.unavailable = "vgpu-scrub: /usr/libexec/slurm-vgpu/vgpu-scrub: No such file or directory";
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << "partition gpu's scrub is optional: " << problems->front();
  for (auto& p : policy.partitions) p.scrub = ScrubMode::required;
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_EQ(problems->front(),
            "scrub: partition gpu requires it, but vgpu-scrub: /usr/libexec/slurm-vgpu/vgpu-scrub: No such file or "
            "directory: every instance its jobs release is quarantined (docs/scrub.md)");
  EXPECT_NE(std::ranges::find(r->notes, problems->front()), r->notes.end()) << "the round says it in the same words";
  scrubber.unavailable.clear();
  problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << "a scrub that can run is no problem: " << problems->front();
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
