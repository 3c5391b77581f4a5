// Locality read through hwloc from XML topologies: the captured H100 node and synthetic
// multi-socket shapes (see fixtures/make_fixtures.py for how each is laid out).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/locality/locality.h"

namespace vgpu {
namespace {

const std::string kFixtures = VGPU_LOCALITY_FIXTURES;
const std::string kH100 = std::string(VGPU_DATA_DIR) + "/h100/h100-node-topology.xml";

Topology load(const std::string& path) {
  auto t = load_topology(path);
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t.has_value() ? *t : Topology{};
}

struct Expected {
  const char* bus_id;
  std::vector<unsigned> numa;
  const char* numa_from;
  const char* cores;
  const char* pus;
  const char* cpus_from;
};

void expect_locality(const Topology& t, const Expected& e) {
  SCOPED_TRACE(e.bus_id);
  auto loc = locate_gpu(t, e.bus_id);
  ASSERT_TRUE(loc.has_value()) << loc.error().message;
  EXPECT_EQ(loc->numa_nodes, e.numa);
  EXPECT_EQ(loc->numa_from, e.numa_from);
  EXPECT_EQ(loc->core_list(), e.cores);
  EXPECT_EQ(loc->pu_list(), e.pus);
  EXPECT_EQ(loc->cpus_from, e.cpus_from);
}

TEST(H100Node, GpuIsOnNumaNode0WithAllSixteenCores) {
  // The capture is a 16-vCPU VM: one package, one NUMA node, host bridge under the Machine.
  const auto t = load(kH100);
  expect_locality(t, {"0000:00:06.0", {0}, "Machine L#0", "0-15", "0-15", "Machine L#0"});
  auto loc = locate_gpu(t, "00000000:00:06.0");
  ASSERT_TRUE(loc.has_value()) << loc.error().message;
  EXPECT_EQ(loc->vendor_id, 0x10de);
  EXPECT_EQ(loc->device_id, 0x2330);
  EXPECT_EQ(loc->pus.size(), 16u);
}

TEST(H100Node, VirtioDevicesAreNotGpus) {
  const auto t = load(kH100);
  auto all = locate_all_gpus(t);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(to_string(all->front().bus_id), "0000:00:06.0");
  auto disk = locate_gpu(t, "0000:00:01.0");
  ASSERT_FALSE(disk.has_value());
  EXPECT_EQ(disk.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(disk.error().message.find("1af4:1042 is class 0180, not a GPU"), std::string::npos) << disk.error().message;
}

TEST(H100Node, UnknownBusIdNamesTheFileAndTheGpuPresent) {
  const auto t = load(kH100);
  auto loc = locate_gpu(t, "0000:00:07.0");
  ASSERT_FALSE(loc.has_value());
  EXPECT_EQ(loc.error().code, ErrorCode::not_found);
  EXPECT_EQ(loc.error().message, "PCI bus id 0000:00:07.0: not found in topology of XML file " + kH100 +
                                     "; PCI GPUs present: 0000:00:06.0 [10de:2330]");
}

TEST(TwoSocketEightGpu, EachGpuBindsToItsOwnNumaDomain) {
  const auto t = load(kFixtures + "/two-socket-eight-gpu.xml");
  const std::vector<Expected> expected{
      {"0000:17:00.0", {0}, "Group L#0", "0-3", "0-3,16-19", "Group L#0"},
      {"0000:2a:00.0", {0}, "Group L#0", "0-3", "0-3,16-19", "Group L#0"},
      {"0000:3d:00.0", {1}, "Group L#1", "4-7", "4-7,20-23", "Group L#1"},
      {"0000:63:00.0", {1}, "Group L#1", "4-7", "4-7,20-23", "Group L#1"},
      // Socket 1's cores restart at OS index 0; Slurm's Cores= wants the logical 8-15.
      {"0000:99:00.0", {2}, "Group L#2", "8-11", "8-11,24-27", "Group L#2"},
      {"00000000:ab:00.0", {2}, "Group L#2", "8-11", "8-11,24-27", "Group L#2"},
      {"0000:bd:00.0", {3}, "Group L#3", "12-15", "12-15,28-31", "Group L#3"},
      {"00000001:05:00.0", {3}, "Group L#3", "12-15", "12-15,28-31", "Group L#3"},
  };
  for (const auto& e : expected) expect_locality(t, e);
}

TEST(TwoSocketEightGpu, ListsAllEightGpusInBusOrderAndSkipsTheNic) {
  const auto t = load(kFixtures + "/two-socket-eight-gpu.xml");
  auto all = locate_all_gpus(t);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  std::vector<std::string> ids;
  for (const auto& l : *all) ids.push_back(to_string(l.bus_id));
  EXPECT_EQ(ids, (std::vector<std::string>{"0000:17:00.0", "0000:2a:00.0", "0000:3d:00.0", "0000:63:00.0",
                                           "0000:99:00.0", "0000:ab:00.0", "0000:bd:00.0", "0001:05:00.0"}));
  auto nic = locate_gpu(t, "0000:c1:00.0");
  ASSERT_FALSE(nic.has_value());
  EXPECT_NE(nic.error().message.find("15b3:101d is class 0207, not a GPU"), std::string::npos) << nic.error().message;
  EXPECT_EQ(nic.error().message.find("c1:00.0 ["), std::string::npos) << "NIC listed as a GPU";
}

TEST(GpuOnMachine, GpuWithoutLocalDomainGetsTheWholeMachine) {
  const auto t = load(kFixtures + "/gpu-on-machine.xml");
  expect_locality(t, {"0000:05:00.0", {0, 1}, "Machine L#0", "0-7", "0-7", "Machine L#0"});
  expect_locality(t, {"0000:81:00.0", {1}, "Package L#1", "4-7", "4-7", "Package L#1"});
}

TEST(CpulessNuma, GpuInAMemoryOnlyDomainKeepsItsNodeButBorrowsTheNearestCpus) {
  const auto t = load(kFixtures + "/cpuless-numa.xml");
  expect_locality(t, {"0000:1b:00.0", {1}, "Group L#0", "0-3", "0-3", "Machine L#0"});
  expect_locality(t, {"0000:0a:00.0", {0}, "Package L#0", "0-3", "0-3", "Package L#0"});
}

TEST(LoadTopology, MissingXmlNamesTheFileAndTheReason) {
  const std::string path = kFixtures + "/no-such-topology.xml";
  auto t = load_topology(path);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().message, "cannot read topology XML " + path + ": No such file or directory");
}

TEST(LoadTopology, GarbageXmlNamesTheFile) {
  const auto path = std::filesystem::temp_directory_path() / "vgpu-locality-garbage.xml";
  std::ofstream(path) << "<topology version=\"2.0\"><object type=\"Machine\"";
  auto t = load_topology(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::corrupt);
  EXPECT_NE(t.error().message.find("topology XML " + path.string() + ": hwloc could not load it"), std::string::npos)
      << t.error().message;
}

TEST(LoadTopology, LiveMachineHasCoresWithPus) {
  auto t = load_topology(std::nullopt);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->source, "this machine");
  ASSERT_FALSE(t->cores.empty());
  for (const auto& c : t->cores) EXPECT_FALSE(c.pus.empty()) << "core L#" << c.logical_index;
}

std::string run(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  status = pclose(p);
  return out;
}

TEST(LocalityCli, PrintsJsonForTheRequestedGpus) {
  int status = -1;
  const auto out = run(std::string(VGPU_LOCALITY_CLI) + " --xml " + kFixtures +
                           "/two-socket-eight-gpu.xml 00000000:99:00.0 0000:17:00.0",
                       status);
  ASSERT_EQ(status, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["bus_id"], "0000:99:00.0");
  EXPECT_EQ(j["gpus"][0]["cores"], "8-11");
  EXPECT_EQ(j["gpus"][0]["numa_nodes"], nlohmann::json::array({2}));
  EXPECT_EQ(j["gpus"][1]["pus"], "0-3,16-19");
}

TEST(LocalityCli, FailsWithTheReasonOnUnknownGpu) {
  int status = -1;
  const auto out = run(std::string(VGPU_LOCALITY_CLI) + " --xml " + kH100 + " 0000:00:09.0 2>&1", status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("vgpu-locality: PCI bus id 0000:00:09.0: not found"), std::string::npos) << out;
}

}  // namespace
}  // namespace vgpu
