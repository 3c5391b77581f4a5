// The pure locality rules, on hand-built Topology values (no hwloc involved).
#include <gtest/gtest.h>

#include <vector>

#include "vgpu/locality/locality.h"

namespace vgpu {
namespace {

TEST(PciBusId, AcceptsSysfsAndNvmlSpellings) {
  auto sysfs = parse_pci_bus_id("0000:00:06.0");
  auto nvml = parse_pci_bus_id("00000000:00:06.0");
  ASSERT_TRUE(sysfs.has_value());
  ASSERT_TRUE(nvml.has_value());
  EXPECT_EQ(*sysfs, *nvml);
  EXPECT_EQ(sysfs->device, 6);
  EXPECT_EQ(to_string(*nvml), "0000:00:06.0");
}

TEST(PciBusId, IsCaseInsensitiveAndPrintsLowerCase) {
  auto id = parse_pci_bus_id("00000001:AB:1F.7");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->domain, 1u);
  EXPECT_EQ(id->bus, 0xab);
  EXPECT_EQ(id->device, 0x1f);
  EXPECT_EQ(id->function, 7);
  EXPECT_EQ(to_string(*id), "0001:ab:1f.7");
}

TEST(PciBusId, RejectsMalformedTextNamingIt) {
  for (const char* bad :
       {"", "00:06.0", "000:00:06.0", "00000:00:06.0", "0000:0:06.0", "0000:00:20.0", "0000:00:06.8", "0000:00:06.00",
        "0000:00:06", "0000-00-06.0", "0000:00:06.0 ", "+000:00:06.0", "0000:g0:06.0"}) {
    auto r = parse_pci_bus_id(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos) << r.error().message;
  }
}

TEST(IndexList, CollapsesRunsLikeSlurm) {
  const std::vector<unsigned> ids{47, 0,  1,  2,  32, 33, 15, 3,  4,  5,  6,  7,  8,  9,  10, 11,
                                  12, 13, 14, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46};
  EXPECT_EQ(format_index_list(ids), "0-15,32-47");
  EXPECT_EQ(format_index_list(std::vector<unsigned>{5, 3, 3, 9}), "3,5,9");
  EXPECT_EQ(format_index_list(std::vector<unsigned>{}), "");
  EXPECT_EQ(format_index_list(std::vector<unsigned>{7}), "7");
  EXPECT_EQ(format_index_list(std::vector<unsigned>{1, 2}), "1-2");
}

Topology tiny_topology() {
  Topology t;
  t.source = "test";
  t.cores = {{0, {0, 2}}, {1, {1, 3}}};
  PciDevice gpu;
  gpu.bus_id = {0, 0x3b, 0, 0};
  gpu.vendor_id = 0x10de;
  gpu.device_id = 0x2330;
  gpu.class_id = 0x0302;
  gpu.ancestors = {{"Group", 3, {}, {4}}, {"Package", 0, {1, 3}, {0, 4}}, {"Machine", 0, {0, 1, 2, 3}, {0, 4}}};
  t.pci_devices.push_back(gpu);
  return t;
}

TEST(LocateGpu, TakesNumaFromNearestAncestorAndCpusFromNearestWithCpus) {
  auto loc = locate_gpu(tiny_topology(), "0000:3b:00.0");
  ASSERT_TRUE(loc.has_value()) << loc.error().message;
  EXPECT_EQ(loc->numa_nodes, std::vector<unsigned>{4});
  EXPECT_EQ(loc->numa_from, "Group L#3");
  EXPECT_EQ(loc->pus, (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(loc->cores, std::vector<unsigned>{1});
  EXPECT_EQ(loc->cpus_from, "Package L#0");
}

TEST(LocateGpu, TreatsEachPuAsACoreWhenTopologyHasNoCores) {
  auto t = tiny_topology();
  t.cores.clear();
  auto loc = locate_gpu(t, "0000:3b:00.0");
  ASSERT_TRUE(loc.has_value()) << loc.error().message;
  EXPECT_EQ(loc->cores, (std::vector<unsigned>{1, 3}));
}

TEST(LocateGpu, FailsWhenNoAncestorHasCpus) {
  auto t = tiny_topology();
  for (auto& a : t.pci_devices[0].ancestors) a.pus.clear();
  auto loc = locate_gpu(t, "0000:3b:00.0");
  ASSERT_FALSE(loc.has_value());
  EXPECT_EQ(loc.error().code, ErrorCode::corrupt);
  EXPECT_NE(loc.error().message.find("GPU 0000:3b:00.0: no ancestor up to Machine L#0 has any CPU"), std::string::npos)
      << loc.error().message;
}

TEST(LocateGpu, UnknownBusIdListsTheGpusThatExist) {
  auto loc = locate_gpu(tiny_topology(), "0000:3c:00.0");
  ASSERT_FALSE(loc.has_value());
  EXPECT_EQ(loc.error().code, ErrorCode::not_found);
  EXPECT_EQ(loc.error().message,
            "PCI bus id 0000:3c:00.0: not found in topology of test; PCI GPUs present: 0000:3b:00.0 [10de:2330]");
}

TEST(LocateGpu, SaysSoWhenTheTopologyHasNoGpuAtAll) {
  Topology t;
  t.source = "XML file x.xml";
  auto loc = locate_gpu(t, "0000:3c:00.0");
  ASSERT_FALSE(loc.has_value());
  EXPECT_NE(loc.error().message.find("PCI GPUs present: none"), std::string::npos) << loc.error().message;
}

TEST(LocalityJson, CarriesSlurmCoreListAndPuIndexes) {
  auto loc = locate_gpu(tiny_topology(), "0000:3b:00.0");
  ASSERT_TRUE(loc.has_value());
  EXPECT_EQ(to_json(*loc), R"({"bus_id":"0000:3b:00.0","pci_id":"10de:2330","numa_nodes":[4],"numa_from":"Group L#3",)"
                           R"("cores":"1","pus":"1,3","pu_indexes":[1,3],"cpus_from":"Package L#0"})");
}

}  // namespace
}  // namespace vgpu
