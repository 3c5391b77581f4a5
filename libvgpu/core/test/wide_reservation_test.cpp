#include "vgpu/core/wide_reservation.h"

#include <gtest/gtest.h>

#include <vector>

namespace vgpu {
namespace {

using Nodes = std::vector<std::string>;

TEST(WideReservation, TheLeastBusyNodesHoldForTheRequest) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 6}, {"n2", 8, 2}, {"n3", 8, 4}};
  std::vector<WideRequest> req = {{"42", 2, 4}};
  auto got = choose_wide_reservations(req, nodes, {});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job, "42");
  EXPECT_EQ(got[0].nodes, (Nodes{"n2", "n3"}));
}

TEST(WideReservation, SlurmsNodeOrderBreaksTies) {
  std::vector<ReservationCandidate> nodes = {{"b", 8, 1}, {"a", 8, 1}, {"c", 8, 0}};
  std::vector<WideRequest> req = {{"7", 2, 1}};
  EXPECT_EQ(choose_wide_reservations(req, nodes, {})[0].nodes, (Nodes{"c", "b"}));
}

TEST(WideReservation, NodesWithTooFewGpusAreNeverChosen) {
  std::vector<ReservationCandidate> nodes = {{"small", 2, 0}, {"big", 8, 7}};
  std::vector<WideRequest> req = {{"1", 1, 4}};
  EXPECT_EQ(choose_wide_reservations(req, nodes, {})[0].nodes, (Nodes{"big"}));
  req[0].gpus_per_node = 0;  // the caller cannot tell: any node will do
  EXPECT_EQ(choose_wide_reservations(req, nodes, {})[0].nodes, (Nodes{"small"}));
}

TEST(WideReservation, ANodeHoldsForOneRequestOnlyAndEarlierRequestsChooseFirst) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 0}, {"n2", 8, 5}, {"n3", 8, 3}};
  std::vector<WideRequest> req = {{"old", 1, 8}, {"young", 2, 8}, {"third", 1, 8}};
  auto got = choose_wide_reservations(req, nodes, {});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (WideReservation{"old", {"n1"}}));
  EXPECT_EQ(got[1], (WideReservation{"young", {"n3", "n2"}}));
}

TEST(WideReservation, ARequestThatCannotGetEveryNodeGetsNone) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 0}, {"n2", 2, 0}};
  std::vector<WideRequest> req = {{"wide", 2, 4}, {"next", 1, 4}};
  auto got = choose_wide_reservations(req, nodes, {});
  ASSERT_EQ(got.size(), 1u) << "holding n1 alone would cost others and never start `wide`";
  EXPECT_EQ(got[0], (WideReservation{"next", {"n1"}}));
}

TEST(WideReservation, APreviousChoiceIsKeptWhileItStillHolds) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 0}, {"n2", 8, 3}, {"n3", 8, 6}};
  std::vector<WideRequest> req = {{"42", 1, 8}};
  std::vector<WideReservation> before = {{"42", {"n3"}}};
  EXPECT_EQ(choose_wide_reservations(req, nodes, before)[0].nodes, (Nodes{"n3"}))
      << "n3 has been draining for the job; n1 emptying since is no reason to start over";
}

TEST(WideReservation, APreviousChoiceIsDroppedWhenANodeLeavesOrIsTakenFirst) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 0}, {"n2", 8, 3}};
  std::vector<WideRequest> req = {{"42", 1, 8}};
  std::vector<WideReservation> gone = {{"42", {"n9"}}};  // drained by the admin, or left the partition
  EXPECT_EQ(choose_wide_reservations(req, nodes, gone)[0].nodes, (Nodes{"n1"}));

  std::vector<WideRequest> two = {{"older", 1, 8}, {"42", 1, 8}};
  std::vector<WideReservation> before = {{"older", {"n1"}}, {"42", {"n1"}}};
  auto got = choose_wide_reservations(two, nodes, before);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], (WideReservation{"42", {"n2"}}));
}

TEST(WideReservation, NoRequestsOrNoNodesReserveNothing) {
  std::vector<ReservationCandidate> nodes = {{"n1", 8, 0}};
  EXPECT_TRUE(choose_wide_reservations({}, nodes, {}).empty());
  std::vector<WideRequest> req = {{"1", 1, 1}, {"2", 0, 1}};
  EXPECT_TRUE(choose_wide_reservations(req, {}, {}).empty());
  EXPECT_EQ(choose_wide_reservations(req, nodes, {}).size(), 1u) << "a request for 0 nodes holds nothing";
}

}  // namespace
}  // namespace vgpu
