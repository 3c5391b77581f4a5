// Share groups: who holds the shares of a shared slot or instance, how shares are taken (the
// fullest group of the same user first, one share per job per instance) and given back (the last
// one retires the instance), and the rules a ledger holding them must keep.
#include "vgpu/ledger/share_groups.h"

#include <gtest/gtest.h>

#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

constexpr std::int64_t kNow = 1'800'000'000;

// An H100 with two planned 3g.40gb places, each for four shares of "quarter".
Ledger h100_with_two_quarter_slots() {
  Ledger l;
  l.node = "n1";
  l.gpus.push_back({0, "GPU-1111", "H100-80GB", "0000:00:06.0"});
  l.classes = {GpuClass{"quarter", 0, 0.0, "3g.40gb", 4}};
  l.plan.slots.push_back({0, "quarter", {0, 4}, std::nullopt});
  l.plan.slots.push_back({0, "quarter", {4, 4}, std::nullopt});
  return l;
}

Catalog catalog_of(const Ledger& l) { return Catalog::with_classes(Catalog::builtin(), l.classes); }

std::vector<JobId> holders_at(const Ledger& l, int start) {
  std::vector<JobId> jobs;
  if (const ShareGroup* g = share_group_at(l, 0, {start, 4}))
    for (const auto& h : g->holders) jobs.push_back(h.job);
  return jobs;
}

LedgerInstance quarter_instance_at(int start, int gi) {
  LedgerInstance inst;
  inst.gpu = 0;
  inst.profile = "quarter";
  inst.placement = {start, 4};
  inst.gpu_instance_id = gi;
  inst.mig_uuid = "MIG-" + std::to_string(gi);
  inst.state = InstanceState::ready;
  inst.created_at = kNow;
  return inst;
}

TEST(ShareGroups, AUsersSharesFillOneInstanceBeforeTheNextAndOtherUsersWaitForTheirOwn) {
  Ledger l = h100_with_two_quarter_slots();
  const Catalog c = catalog_of(l);
  ASSERT_TRUE(claim_shares(l, c, 1, "alice", "quarter", 1, false, kNow));
  ASSERT_TRUE(claim_shares(l, c, 2, "alice", "quarter", 1, false, kNow));
  ASSERT_TRUE(claim_shares(l, c, 3, "bob", "quarter", 1, false, kNow));
  EXPECT_EQ(holders_at(l, 0), (std::vector<JobId>{1, 2}));
  EXPECT_EQ(holders_at(l, 4), (std::vector<JobId>{3}));
  const Ledger before = l;
  auto carol = claim_shares(l, c, 4, "carol", "quarter", 1, false, kNow);
  ASSERT_FALSE(carol);
  EXPECT_EQ(carol.error().code, ErrorCode::no_capacity);
  EXPECT_NE(carol.error().message.find("job 4: wants 1 x quarter"), std::string::npos) << carol.error().message;
  EXPECT_EQ(l, before) << "a refused claim changes nothing";
  // Where the partition shares across users, carol joins the fullest group.
  ASSERT_TRUE(claim_shares(l, c, 4, "carol", "quarter", 1, true, kNow));
  EXPECT_EQ(holders_at(l, 0), (std::vector<JobId>{1, 2, 4}));
  EXPECT_TRUE(validate(l));
}

TEST(ShareGroups, AJobsSecondShareIsASecondInstanceAndARetriedClaimTakesNothingTwice) {
  Ledger l = h100_with_two_quarter_slots();
  const Catalog c = catalog_of(l);
  ASSERT_TRUE(claim_shares(l, c, 7, "alice", "quarter", 2, false, kNow));
  EXPECT_EQ(holders_at(l, 0), (std::vector<JobId>{7}));
  EXPECT_EQ(holders_at(l, 4), (std::vector<JobId>{7}));
  const Ledger once = l;
  ASSERT_TRUE(claim_shares(l, c, 7, "alice", "quarter", 2, false, kNow + 5));
  EXPECT_EQ(l, once);
  EXPECT_EQ(share_groups_of_job(l, 7).size(), 2u);
  auto three = claim_shares(l, c, 7, "alice", "quarter", 3, false, kNow);
  ASSERT_FALSE(three);
  EXPECT_NE(three.error().message.find("2 already held by the job"), std::string::npos) << three.error().message;
}

TEST(ShareGroups, TheInstanceTakesOverItsSlotAndTheLastShareRetiresIt) {
  Ledger l = h100_with_two_quarter_slots();
  const Catalog c = catalog_of(l);
  ASSERT_TRUE(claim_shares(l, c, 1, "alice", "quarter", 1, false, kNow));
  ASSERT_TRUE(claim_shares(l, c, 2, "alice", "quarter", 1, false, kNow + 10));
  ASSERT_TRUE(add_instance(l, quarter_instance_at(0, 1), c));
  EXPECT_EQ(l.plan.slots.size(), 1u) << "the group's slot became the instance";
  EXPECT_EQ(holders_at(l, 0), (std::vector<JobId>{1, 2})) << "the group moved with it";

  auto first = release_shares(l, 1, kNow + 100, "completed");
  EXPECT_EQ(first, (std::vector<ReleasedShare>{{0, {0, 4}, false, true}}));
  ASSERT_EQ(l.new_history.size(), 1u);
  EXPECT_EQ(l.new_history[0],
            (HistoryRecord{1, "alice", 0, "quarter", {0, 4}, "MIG-1", kNow, kNow + 100, "completed"}));
  EXPECT_EQ(l.instances[0].state, InstanceState::ready) << "job 2 still runs in it";

  auto last = release_shares(l, 2, kNow + 200, "cancelled");
  EXPECT_EQ(last, (std::vector<ReleasedShare>{{0, {0, 4}, true, true}}));
  EXPECT_EQ(l.new_history.back().start_time, kNow + 10);
  EXPECT_TRUE(l.share_groups.empty());
  EXPECT_EQ(l.instances[0].state, InstanceState::scrubbing);
  EXPECT_TRUE(is_released(l.instances[0]));
  EXPECT_EQ(l.plan.slots.size(), 2u) << "a backed slot keeps the place in the plan";
  EXPECT_TRUE(validate(l));
  EXPECT_TRUE(release_shares(l, 2, kNow, "completed").empty()) << "a second epilog finds nothing";
}

TEST(ShareGroups, TheLastShareOfASlotNotYetMadeLeavesTheSlotUnheld) {
  Ledger l = h100_with_two_quarter_slots();
  const Catalog c = catalog_of(l);
  ASSERT_TRUE(claim_shares(l, c, 1, "alice", "quarter", 1, false, kNow));
  auto released = release_shares(l, 1, kNow, "cancelled");
  EXPECT_EQ(released, (std::vector<ReleasedShare>{{0, {0, 4}, true, false}}));
  EXPECT_TRUE(l.new_history.empty()) << "no instance, no tenancy";
  EXPECT_EQ(l, h100_with_two_quarter_slots());
}

TEST(ShareGroups, ALedgerBreakingTheirRulesIsCorruptAndSaysWhere) {
  const Ledger good = [] {
    Ledger l = h100_with_two_quarter_slots();
    l.share_groups.push_back({0, {0, 4}, "quarter", {{1, "alice", kNow}}});
    return l;
  }();
  ASSERT_TRUE(validate(good));
  auto error_of = [](const Ledger& l) {
    auto r = validate(l);
    return r ? std::string("valid") : r.error().message;
  };
  Ledger l = good;
  for (JobId j = 2; j <= 5; ++j) l.share_groups[0].holders.push_back({j, "alice", kNow});
  EXPECT_NE(error_of(l).find("share_groups[0].holders: 5 holders: quarter has 1 to 4 shares"), std::string::npos)
      << error_of(l);
  l = good;
  l.share_groups[0].holders.push_back({1, "alice", kNow});
  EXPECT_NE(error_of(l).find("share_groups[0].holders[1].job: 1: holds a second share"), std::string::npos)
      << error_of(l);
  l = good;
  l.share_groups[0].placement = {4, 4};
  l.plan.slots.pop_back();
  EXPECT_NE(error_of(l).find("share_groups[0].placement: {4,4} on GPU 0: stands on 0 slot(s)"), std::string::npos)
      << error_of(l);
  l = good;
  l.share_groups[0].type = "3g.40gb";
  EXPECT_NE(error_of(l).find("share_groups[0].type: 3g.40gb: not a share type"), std::string::npos) << error_of(l);
  l = good;
  l.plan.slots[1].claimed_by_job = 9;
  EXPECT_NE(error_of(l).find("plan.slots[1].claimed_by_job: 9: a slot of share type quarter"), std::string::npos)
      << error_of(l);
  l = good;
  l.share_groups.push_back(l.share_groups[0]);
  l.share_groups[1].holders[0].job = 2;
  EXPECT_NE(error_of(l).find("share_groups[1].placement: {0,4} on GPU 0: a second group"), std::string::npos)
      << error_of(l);
}

TEST(ShareGroups, RoundTripInAVersionFiveLedgerOnly) {
  Ledger l = h100_with_two_quarter_slots();
  const Catalog c = catalog_of(l);
  ASSERT_TRUE(claim_shares(l, c, 1, "alice", "quarter", 1, false, kNow));
  ASSERT_TRUE(add_instance(l, quarter_instance_at(0, 1), c));
  const std::string text = serialize_ledger(l);
  auto back = parse_ledger(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, l);
  // Without share types among its classes a ledger with share groups still needs version 5.
  Ledger no_share_types = l;
  no_share_types.classes.clear();
  EXPECT_NE(serialize_ledger(no_share_types).find("\"version\": 5"), std::string::npos);
  std::string v4 = text;
  v4.replace(v4.find("\"version\": 5"), 12, "\"version\": 4");
  auto old = parse_ledger(v4);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message.find("a version 4 ledger has no"), std::string::npos) << old.error().message;
  std::string bad_since = text;
  bad_since.replace(bad_since.find("\"since\": 1800000000"), 19, "\"since\": -1");
  auto r = parse_ledger(bad_since);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("share_groups[0].holders[0].since: -1"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace vgpu
