// The epilog's flow and the release pass over doubles: scrubs that fail or cannot run, instances
// kept idle, cleanup locks other processes hold, the hand-off to a cleanup process.
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
#include "recording_handoff.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using testing::NodeFlows;
using testing::RecordingHandoff;

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
// instance is destroyed, not kept.
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
  auto next = std::async(std::launch::async, [&] {
    return run_prolog(ctx, {30, "bob", "gpu", "3g.40gb:1", std::nullopt});
  });
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
            std::string::npos)
      << all_logs();
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
                            "; cleaning up here"),
            std::string::npos)
      << all_logs();
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
            std::string::npos)
      << done->problems[0];
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
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
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

}  // namespace
}  // namespace vgpu
