// Who prepares for a pending job: a few nodes at first, all after a bounded wait, the same nodes
// in every process, spread evenly, and moved as little as possible when the partition changes.
#include "vgpu/node/demand_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace vgpu {
namespace {

std::vector<std::string> node_names(std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 1; i <= n; ++i) names.push_back(fmt::format("gpu{:03}", i));
  return names;
}

std::set<std::string> chosen(std::string_view job, const std::vector<std::string>& nodes, std::size_t count) {
  std::set<std::string> names;
  for (auto i : preparers(job, nodes, count)) names.insert(nodes[i]);
  return names;
}

TEST(PreparerCount, AJobStartsWithAFewNodesAndTwiceWhatItNeeds) {
  EXPECT_EQ(preparer_count(1, 0, 5, 256), kMinPreparers);
  EXPECT_EQ(preparer_count(3, 0, 5, 256), 6u);
  EXPECT_EQ(preparer_count(0, 0, 5, 256), kMinPreparers);    // a line that says 0 needs one
  EXPECT_EQ(preparer_count(1, -30, 5, 256), kMinPreparers);  // a clock ahead of the controller's
  EXPECT_EQ(preparer_count(1, 0, 5, 3), 3u);                 // a partition smaller than the minimum
  EXPECT_EQ(preparer_count(200, 0, 5, 256), 256u);           // a wide job: every node
  EXPECT_EQ(preparer_count(1, 0, 5, 0), 0u);
}

TEST(PreparerCount, TheSetDoublesEveryThreePeriodsUntilEveryNodePrepares) {
  EXPECT_EQ(preparer_count(1, 14, 5, 256), 4u);
  EXPECT_EQ(preparer_count(1, 15, 5, 256), 8u);
  EXPECT_EQ(preparer_count(1, 30, 5, 256), 16u);
  EXPECT_EQ(preparer_count(1, 85, 5, 256), 128u);
  EXPECT_EQ(preparer_count(1, 90, 5, 256), 256u);
  EXPECT_EQ(preparer_count(1, 86400 * 365, 5, 5000), 5000u);  // a year's wait is bounded too
  EXPECT_EQ(preparer_count(1, 60, 30, 256), 4u);              // a longer period waits longer
  EXPECT_EQ(preparer_count(1, 90, 30, 256), 8u);
}

TEST(PreparersFor, ASetThatAlreadyOffersWhatTheJobAsksDoesNotWiden) {
  const auto nodes = node_names(256);
  const auto first = preparers("42", nodes, 4);
  const auto none = [](std::size_t) { return false; };
  const auto only_first = [&](std::size_t n) { return n == first[0]; };
  // Nothing offered: the width the wait gives, as before.
  EXPECT_EQ(preparers_for("42", nodes, 1, 30, 5, none), preparers("42", nodes, 16));
  // Its first preparer shows the type free: the job waits on Slurm; the set stays at 4.
  EXPECT_EQ(preparers_for("42", nodes, 1, 30, 5, only_first), first);
  // A job that needs two nodes needs two that offer: one is not enough.
  EXPECT_EQ(preparers_for("42", nodes, 2, 30, 5, only_first).size(), 16u);
  // After kOfferHoldPeriods it widens whatever is offered (a node Slurm will not use for it).
  EXPECT_EQ(preparers_for("42", nodes, 1, 5 * kOfferHoldPeriods, 5, only_first).size(), 256u);
}

TEST(Preparers, TheWeightIsTheSameInEveryProcessAndRelease) {
  // The publisher and a planner reading a whole view must agree: a change here is a format change.
  // FNV-1a over "42", a NUL and "gpu17", then splitmix64's finalizer (computed apart, in Python).
  EXPECT_EQ(preparer_weight("42", "gpu17"), 0x568318da76fc9896ULL);
  EXPECT_NE(preparer_weight("1", "23"), preparer_weight("12", "3"));
}

TEST(Preparers, AWiderSetKeepsTheNodesAlreadyChosen) {
  const auto nodes = node_names(256);
  for (std::string job : {"42", "42_[1-5]", "7_3", "1000001"}) {
    auto before = chosen(job, nodes, 4);
    for (std::size_t count : {8u, 16u, 256u}) {
      auto wider = chosen(job, nodes, count);
      EXPECT_EQ(wider.size(), count) << job;
      EXPECT_TRUE(std::ranges::includes(wider, before)) << job << " at " << count;
      before = std::move(wider);
    }
  }
}

TEST(Preparers, JobsSpreadEvenlyOverTheNodes) {
  const auto nodes = node_names(256);
  std::vector<int> load(nodes.size());
  constexpr int kJobs = 1024;
  for (int job = 1; job <= kJobs; ++job)
    for (auto i : preparers(std::to_string(job), nodes, kMinPreparers)) ++load[i];
  const double mean = kJobs * double(kMinPreparers) / double(nodes.size());  // 16
  EXPECT_GT(*std::ranges::min_element(load), 0);
  EXPECT_LT(*std::ranges::max_element(load), 2.5 * mean);
}

TEST(Preparers, ANodeLeavingMovesOnlyTheJobsItWasChosenFor) {
  auto nodes = node_names(64);
  auto fewer = nodes;
  fewer.erase(fewer.begin() + 10);  // gpu011 drains
  int kept = 0;
  for (int job = 1; job <= 200; ++job) {
    const auto id = std::to_string(job);
    const auto before = chosen(id, nodes, 4);
    const auto after = chosen(id, fewer, 4);
    if (before.contains("gpu011")) {
      std::set<std::string> stayed;
      std::ranges::set_intersection(before, after, std::inserter(stayed, stayed.end()));
      EXPECT_EQ(stayed.size(), 3u) << id;
    } else {
      EXPECT_EQ(after, before) << id;
      ++kept;
    }
  }
  EXPECT_GT(kept, 150);  // about 188 of 200: the others had gpu011 among their four
}

TEST(MayPrepare, OnlyNodesSlurmStartsJobsOn) {
  for (std::string_view state : {"IDLE", "MIXED", "ALLOCATED", "IDLE+RESERVED", "IDLE+PLANNED", "MIXED+COMPLETING"})
    EXPECT_TRUE(may_prepare(state)) << state;
  for (std::string_view state : {"DOWN", "IDLE+DRAIN", "MIXED+DRAIN", "DOWN+NOT_RESPONDING", "IDLE+POWERED_DOWN",
                                 "FUTURE", "IDLE+FAIL", "INVAL"})
    EXPECT_FALSE(may_prepare(state)) << state;
}

}  // namespace
}  // namespace vgpu
