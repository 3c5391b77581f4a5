// The whole-GPU placement fed by NVML's topology answers, through the fake replaying the three
// boards where the choice differs (an NVSwitch board, two NVLink-bridged pairs, a PCIe pair), and
// the probe's topology section replaying as it was recorded.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_env.h"
#include "nvml_topology.h"

namespace vgpu::test {
namespace {

using nlohmann::json;
using NvmlTopology = FakeNvml;

GpuLinks links_from(const std::string& fixture_name, int gpus, nvml::TopologyRead* raw = nullptr) {
  ::setenv("VGPU_FAKE_NVML_FIXTURE", fixture(fixture_name).c_str(), 1);
  auto reader = nvml::Reader::open();
  EXPECT_EQ(reader->unavailable_reason(), "");
  auto read = nvml::read_topology(*reader, gpus);
  EXPECT_TRUE(read.errors.empty()) << read.errors.front().message();
  if (raw) *raw = read;
  return nvml::links_of(read, gpus);
}

TEST_F(NvmlTopology, OnTwoBridgedPairsTwoGpusAreABridgedPairAndFourSpanTwoDomains) {
  auto links = links_from("h200-nvl-4gpu-bridged.json", 4);
  EXPECT_EQ(links.nvlink, (std::set<std::pair<int, int>>{{0, 1}, {2, 3}}));
  auto two = choose_whole_gpus(links, {0, 1, 2, 3}, 2);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->gpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(two->one_nvlink_domain);
  auto after_one_busy = choose_whole_gpus(links, {1, 2, 3}, 2);
  ASSERT_TRUE(after_one_busy);
  EXPECT_EQ(after_one_busy->gpus, (std::vector<int>{2, 3})) << "1 and 2 are in different NVLink domains";
  auto four = choose_whole_gpus(links, {0, 1, 2, 3}, 4);
  ASSERT_TRUE(four);
  EXPECT_FALSE(four->one_nvlink_domain);
}

TEST_F(NvmlTopology, OnNvSwitchEveryPairIsNvlinkedAndEightGpusAreOneDomain) {
  nvml::TopologyRead raw;
  auto links = links_from("h100-80gb-8gpu.json", 8, &raw);
  EXPECT_EQ(links.nvlink.size(), 28u);
  ASSERT_EQ(raw.gpus.size(), 8u);
  for (const auto& g : raw.gpus) {
    EXPECT_TRUE(g.supported);
    EXPECT_EQ(g.links.size(), 18u);
  }
  auto eight = choose_whole_gpus(links, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
  ASSERT_TRUE(eight);
  EXPECT_TRUE(eight->one_nvlink_domain);
  auto two = choose_whole_gpus(links, {0, 2, 3, 5}, 2);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->gpus, (std::vector<int>{2, 3})) << "the pair behind one PCIe switch";
}

TEST_F(NvmlTopology, APcieCardHasNoNvlinkAndItsPairIsNotOneDomain) {
  nvml::TopologyRead raw;
  auto links = links_from("h100-pcie-2gpu.json", 2, &raw);
  EXPECT_TRUE(links.nvlink.empty());
  ASSERT_EQ(raw.gpus.size(), 2u);
  EXPECT_FALSE(raw.gpus[0].supported) << "nvmlDeviceGetNvLinkState answers NOT_SUPPORTED on a PCIe card";
  ASSERT_EQ(raw.pairs.size(), 1u);
  EXPECT_EQ(raw.pairs[0].common_ancestor, NVML_TOPOLOGY_HOSTBRIDGE);
  EXPECT_EQ(raw.pairs[0].p2p_read, NVML_P2P_STATUS_OK);
  auto both = choose_whole_gpus(links, {0, 1}, 2);
  ASSERT_TRUE(both);
  EXPECT_FALSE(both->one_nvlink_domain);
}

TEST_F(NvmlTopology, TheProbesTopologySectionReplaysAsRecorded) {
  use_fixture("h200-nvl-4gpu-bridged.json");
  auto r = run_command(std::string(VGPU_NVML_PROBE) + " --gpm-seconds 0");
  ASSERT_EQ(r.status, 0) << r.out;
  json recorded = json::parse(r.out);
  EXPECT_EQ(recorded["topology"]["pairs"].size(), 6u);
  EXPECT_EQ(recorded["gpus"][0]["nvlinks"].size(), 18u);
  EXPECT_EQ(recorded["gpus"][0]["nvlinks"][0]["remote_pci_bus_id"], recorded["gpus"][1]["pci_bus_id"]);
  std::string path = dir_ + "/recorded.json";
  std::ofstream(path) << r.out;
  ::setenv("VGPU_FAKE_NVML_FIXTURE", path.c_str(), 1);
  auto reader = nvml::Reader::open();
  auto replayed = nvml::links_of(nvml::read_topology(*reader, 4), 4);
  auto original = links_from("h200-nvl-4gpu-bridged.json", 4);
  EXPECT_EQ(replayed.nvlink, original.nvlink);
  EXPECT_EQ(replayed.pcie_level, original.pcie_level);
}

// The multi-GPU run on real hardware reads the planner's choice from the probe (--choose-whole).
TEST_F(NvmlTopology, TheProbeReportsWhatThePlacementGivesEachRequest) {
  use_fixture("h200-nvl-4gpu-bridged.json");
  auto r = run_command(std::string(VGPU_NVML_PROBE) + " --gpm-seconds 0 --choose-whole 2 5");
  ASSERT_EQ(r.status, 0) << r.out;
  json choices = json::parse(r.out)["whole_gpu_choices"];
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0]["gpus"], json({0, 1}));
  EXPECT_EQ(choices[0]["one_nvlink_domain"], true);
  EXPECT_TRUE(choices[1]["gpus"].is_null()) << "five GPUs on a node of four";
}

TEST_F(NvmlTopology, ASingleGpuOrAGpuWithoutMigHasNoPairs) {
  auto links = links_from("l40s-48gb-1gpu.json", 1);
  EXPECT_TRUE(links.nvlink.empty() && links.pcie_level.empty());
  auto one = choose_whole_gpus(links, {0}, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->gpus, (std::vector<int>{0}));
}

}  // namespace
}  // namespace vgpu::test
