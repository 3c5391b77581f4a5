// A job slurmctld shows on the node that no prolog has claimed for yet may have its launch on the
// way; a SIGHUP before 23.11 waits for it, but only for a while (vgpu/node/launch_watch.h).
#include "vgpu/node/launch_watch.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

Ledger claimed_by(JobId job) {
  Ledger l;
  l.plan.slots.push_back(PlanSlot{0, "1g.10gb", {0, 1}, job});
  return l;
}

TEST(LaunchWatch, AJobTheLedgerDoesNotNameIsInFlight) {
  LaunchWatch watch;
  EXPECT_EQ(watch.in_flight({41, 42}, claimed_by(41), 1000), std::set<JobId>{42});
}

TEST(LaunchWatch, ItsPrologArrivingEndsTheWait) {
  LaunchWatch watch;
  ASSERT_EQ(watch.in_flight({42}, Ledger{}, 1000), std::set<JobId>{42});
  watch.hook_arrived(42, 1001);
  EXPECT_TRUE(watch.in_flight({42}, Ledger{}, 1001).empty());
}

TEST(LaunchWatch, AClaimMadeWithoutThePlannerEndsTheWaitToo) {
  LaunchWatch watch;
  ASSERT_EQ(watch.in_flight({42}, Ledger{}, 1000), std::set<JobId>{42});
  EXPECT_TRUE(watch.in_flight({42}, claimed_by(42), 1001).empty());
}

// A job that ran and ended between two handovers is still listed by a view up to a period old,
// and the ledger no longer names it: its hooks arrived, so nothing of it is on its way.
TEST(LaunchWatch, AJobThatEndedBeforeTheViewCaughtUpIsNotWaitedFor) {
  LaunchWatch watch;
  watch.hook_arrived(42, 1000);  // prolog
  watch.hook_arrived(42, 1004);  // epilog
  EXPECT_TRUE(watch.in_flight({42}, Ledger{}, 1006).empty());
}

TEST(LaunchWatch, AnArrivalIsForgottenOnlyLongAfterTheJobLeftTheNode) {
  LaunchWatch watch;
  watch.hook_arrived(42, 1000);
  ASSERT_TRUE(watch.in_flight({42}, Ledger{}, 1010).empty());
  ASSERT_TRUE(watch.in_flight({}, Ledger{}, 1020).empty());
  EXPECT_TRUE(watch.in_flight({42}, Ledger{}, 1030).empty()) << "a late view still lists it";
  ASSERT_TRUE(watch.in_flight({}, Ledger{}, 1700).empty());
  EXPECT_EQ(watch.in_flight({42}, Ledger{}, 1701), std::set<JobId>{42}) << "requeued here, launched again";
}

TEST(LaunchWatch, AJobUnknownForTheWholeWindowHasNoPrologComing) {
  LaunchWatch watch(20);
  ASSERT_EQ(watch.in_flight({42}, Ledger{}, 1000), std::set<JobId>{42});
  EXPECT_EQ(watch.in_flight({42}, Ledger{}, 1019), std::set<JobId>{42});
  EXPECT_TRUE(watch.in_flight({42}, Ledger{}, 1020).empty()) << "a job without vgpu must not hold every SIGHUP";
  EXPECT_TRUE(watch.in_flight({42}, Ledger{}, 5000).empty());
}

TEST(LaunchWatch, AJobUnknownThatLeftAndCameBackIsWatchedAfresh) {
  LaunchWatch watch(20);
  ASSERT_FALSE(watch.in_flight({42}, Ledger{}, 1000).empty());
  ASSERT_TRUE(watch.in_flight({}, Ledger{}, 1030).empty());
  EXPECT_EQ(watch.in_flight({42}, Ledger{}, 1040), std::set<JobId>{42});
}

TEST(LaunchWatch, ASharedOrVizJobIsNamedToo) {
  Ledger l;
  ShareHolder share;
  share.job = 43;
  l.share_groups.emplace_back().holders.push_back(share);
  l.vms.emplace_back().job = 44;
  LaunchWatch watch;
  EXPECT_TRUE(watch.in_flight({43, 44}, l, 1000).empty());
}

}  // namespace
}  // namespace vgpu
