// What a job brings to the prolog that the node must refuse or leave alone: names the node's
// records cannot keep, counts past the partition's caps, a type named twice, a second prolog for a
// job asking for something else. Each refusal has a reason, and nothing the node holds is lost.
#include <gtest/gtest.h>

#include <string>

#include "node_flows_fixture.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

using testing::NodeFlows;

class PrologHostileInput : public NodeFlows {
 protected:
  void SetUp() override {
    NodeFlows::SetUp();
    ASSERT_TRUE(run_planner_round(ctx, planner));
  }
  // The ledger still loads as it is (nothing set aside) and the next job is served.
  void expect_node_still_serves() {
    auto loaded = store->load();
    ASSERT_TRUE(loaded) << loaded.error().message;
    auto next = run_prolog(ctx, {90, "zoe", "gpu", "1g.10gb:1", std::nullopt});
    ASSERT_TRUE(next) << next.error().message;
    EXPECT_FALSE(next->rejected) << next->reason;
    EXPECT_FALSE(next->requeued) << next->reason;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "n1"))
      EXPECT_EQ(entry.path().filename().string().find(".corrupt-"), std::string::npos) << entry.path();
  }
};

TEST_F(PrologHostileInput, UserNameWithAControlCharacterIsRefusedAndTheLedgerKeepsLoading) {
  for (const std::string& user : {std::string("a\tb"), std::string("a\nb"), std::string(257, 'u')}) {
    auto r = run_prolog(ctx, {301, user, "gpu", "1g.10gb:1", std::nullopt});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->rejected);
    EXPECT_EQ(r->cancel_class, "policy");
    EXPECT_NE(r->reason.find("user name"), std::string::npos) << r->reason;
  }
  EXPECT_TRUE(backend.instances().empty());
  expect_node_still_serves();
}

TEST_F(PrologHostileInput, UserNameThatIsNotUtf8IsRefusedWithAReasonNotAnException) {
  auto r = run_prolog(ctx, {302,
                            "a\xff"
                            "b",
                            "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("not valid UTF-8"), std::string::npos) << r->reason;
  ASSERT_EQ(slurm->rejected.size(), 1u);
  EXPECT_EQ(slurm->rejected[0].first, 302u);
  expect_node_still_serves();
}

TEST_F(PrologHostileInput, UserNameInAnotherScriptIsServed) {
  auto r = run_prolog(ctx, {303, "\xc3\xa9lodie", "gpu", "1g.10gb:1", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->rejected) << r->reason;
  const auto ledger = store->load();
  ASSERT_TRUE(ledger);
  auto held = instances_of_job(*ledger, 303);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0]->user, "\xc3\xa9lodie");
  expect_node_still_serves();
}

TEST_F(PrologHostileInput, PerJobCapCountsEveryTypeOfTheJob) {
  // The partition allows 4 per job: 3 + 3 of two types is 6.
  auto r = run_prolog(ctx, {304, "alice", "gpu", "1g.10gb:3,2g.20gb:3", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("6 instances requested across 2 types, at most 4 per job"), std::string::npos) << r->reason;
  EXPECT_TRUE(backend.instances().empty());
  auto under = run_prolog(ctx, {305, "alice", "gpu", "1g.10gb:2,2g.20gb:2", std::nullopt});
  ASSERT_TRUE(under) << under.error().message;
  EXPECT_FALSE(under->rejected) << under->reason;
  EXPECT_EQ(under->instances.size(), 4u);
}

TEST_F(PrologHostileInput, ATypeNamedTwiceIsRefusedNotHalfServed) {
  auto r = run_prolog(ctx, {306, "alice", "gpu", "1g.10gb:2,1g.10gb:3", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("named twice"), std::string::npos) << r->reason;
  EXPECT_TRUE(backend.instances().empty());
}

TEST_F(PrologHostileInput, ASecondPrologForTheJobChangesNothingItHolds) {
  auto first = run_prolog(ctx, {307, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_FALSE(first->rejected) << first->reason;
  ASSERT_EQ(first->instances.size(), 2u);
  const auto before = store->load();
  ASSERT_TRUE(before);

  auto second = run_prolog(ctx, {307, "alice", "gpu", "2g.20gb:1", std::nullopt});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(second->rejected) << "a valid running job is never cancelled for it";
  EXPECT_NE(second->reason.find("already holds 1g.10gb:2"), std::string::npos) << second->reason;
  EXPECT_EQ(second->instances.size(), 2u);
  EXPECT_EQ(backend.instances().size(), 2u);
  const auto after = store->load();
  ASSERT_TRUE(after);
  EXPECT_EQ(instances_of_job(*after, 307).size(), 2u);
  EXPECT_EQ(store->load()->plan.slots, before->plan.slots);

  // The same request again is a re-run: served again, nothing made twice.
  auto rerun = run_prolog(ctx, {307, "alice", "gpu", "1g.10gb:2", std::nullopt});
  ASSERT_TRUE(rerun);
  EXPECT_FALSE(rerun->rejected);
  EXPECT_EQ(rerun->instances.size(), 2u);
  EXPECT_EQ(backend.creates, 2);
}

}  // namespace
}  // namespace vgpu
