// Device confinement over doubles (docs/security.md): a job's instances open only for its user,
// from the prolog until the epilog takes them back, and an instance kept idle belongs to nobody.
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

}  // namespace
}  // namespace vgpu
