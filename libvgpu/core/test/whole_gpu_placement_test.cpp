// Whole GPUs for a multi-GPU request: one NVLink domain where the node has several, and single
// GPUs placed where they leave the NVLink pairs whole (whole_gpu_placement.h).
#include "vgpu/core/whole_gpu_placement.h"

#include <gtest/gtest.h>

#include <numeric>

namespace vgpu {
namespace {

// Four H200 NVL, bridged 0-1 and 2-3; the pairs sit on the two NUMA nodes.
GpuLinks two_bridged_pairs() {
  GpuLinks l;
  l.gpu_count = 4;
  l.nvlink = {{0, 1}, {2, 3}};
  l.pcie_level = {{{0, 1}, 40}, {{2, 3}, 40}, {{0, 2}, 50}, {{0, 3}, 50}, {{1, 2}, 50}, {{1, 3}, 50}};
  return l;
}

// Eight SXM GPUs on NVSwitch: every pair NVLink-connected; pairs share a PCIe switch (0-1, 2-3, ...).
GpuLinks nvswitch_board() {
  GpuLinks l;
  l.gpu_count = 8;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      l.nvlink.insert({a, b});
      l.pcie_level.push_back({{a, b}, a / 2 == b / 2 ? 10 : (a / 4 == b / 4 ? 40 : 50)});
    }
  return l;
}

std::vector<int> all(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(WholeGpuPlacement, TwoOfTwoBridgedPairsAreOnePair) {
  auto c = choose_whole_gpus(two_bridged_pairs(), all(4), 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(c->one_nvlink_domain);
}

TEST(WholeGpuPlacement, WithOneGpuOfAPairBusyTheOtherPairIsTakenNotTheLeftover) {
  auto c = choose_whole_gpus(two_bridged_pairs(), {1, 2, 3}, 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, (std::vector<int>{2, 3}));
  EXPECT_TRUE(c->one_nvlink_domain);
}

TEST(WholeGpuPlacement, ASingleGpuGoesWhereItBreaksNoFreePair) {
  auto c = choose_whole_gpus(two_bridged_pairs(), {1, 2, 3}, 1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, (std::vector<int>{1})) << "GPU 1's partner is busy; taking 2 or 3 would break a free pair";
}

TEST(WholeGpuPlacement, FourOfTwoPairsSpanDomainsAndSayItOrNoneAreFree) {
  auto c = choose_whole_gpus(two_bridged_pairs(), all(4), 4);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, all(4));
  EXPECT_FALSE(c->one_nvlink_domain);
  EXPECT_FALSE(choose_whole_gpus(two_bridged_pairs(), {0, 2, 3}, 4));
  EXPECT_FALSE(choose_whole_gpus(two_bridged_pairs(), all(4), 0));
}

TEST(WholeGpuPlacement, OnNvSwitchAnyChoiceIsOneDomainAndThePcieClosestWins) {
  auto c = choose_whole_gpus(nvswitch_board(), {1, 2, 3, 5, 6}, 2);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->one_nvlink_domain);
  EXPECT_EQ(c->gpus, (std::vector<int>{2, 3})) << "2 and 3 share a PCIe switch";
  auto four = choose_whole_gpus(nvswitch_board(), all(8), 4);
  ASSERT_TRUE(four);
  EXPECT_EQ(four->gpus, (std::vector<int>{0, 1, 2, 3}));
}

TEST(WholeGpuPlacement, WithoutNvlinkThePcieClosestPairIsChosenAndNotCalledOneDomain) {
  GpuLinks pcie;
  pcie.gpu_count = 3;
  pcie.pcie_level = {{{0, 1}, 50}, {{0, 2}, 50}, {{1, 2}, 30}};
  auto c = choose_whole_gpus(pcie, all(3), 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, (std::vector<int>{1, 2}));
  EXPECT_FALSE(c->one_nvlink_domain);
}

TEST(WholeGpuPlacement, LargeNodesAreChosenGreedilyAndStillStayInOneDomain) {
  // 24 GPUs in three NVSwitch islands of 8 (0-7, 8-15, 16-23); 0-9 busy.
  GpuLinks l;
  l.gpu_count = 24;
  for (int a = 0; a < 24; ++a)
    for (int b = a + 1; b < 24; ++b)
      if (a / 8 == b / 8) l.nvlink.insert({a, b});
  std::vector<int> free;
  for (int g = 10; g < 24; ++g) free.push_back(g);
  for (int g : {1, 3}) free.push_back(g);
  auto c = choose_whole_gpus(l, free, 8);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->one_nvlink_domain);
  EXPECT_EQ(c->gpus, (std::vector<int>{16, 17, 18, 19, 20, 21, 22, 23}));
}

}  // namespace
}  // namespace vgpu
