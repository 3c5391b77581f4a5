#include "fake_amdgpu_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "fake_amdgpu_sysfs.h"
#include "render_node_users.h"

namespace vgpu::fake {
namespace {

const std::string kFixture = std::string(VGPU_SOURCE_DIR) + "/fakeamdgpu/fixtures/mi300x-2gpu.json";
const std::string kGpu0 = "sys/bus/pci/devices/0000:0c:00.0/";

FakeAmdgpuFixture fixture() {
  auto f = load_fake_amdgpu_fixture(kFixture);
  EXPECT_TRUE(f) << f.error().message;
  return *f;
}

int kfd_gpu_nodes(const Sysfs& sysfs) {
  int n = 0;
  const auto nodes = sysfs.list("sys/class/kfd/kfd/topology/nodes");
  for (const auto& node : *nodes)
    if (sysfs.read("sys/class/kfd/kfd/topology/nodes/" + node + "/properties")->find("simd_count 0\n") ==
        std::string::npos)
      ++n;
  return n;
}

TEST(FakeAmdgpuDriver, PublishesTheDriversAttributesBehindPciLinks) {
  FakeAmdgpuDriver driver(fixture(), nullptr);
  FakeAmdgpuSysfs sysfs(driver);
  EXPECT_EQ(
      *sysfs.list("sys/bus/pci/drivers/amdgpu"),
      (std::vector<std::string>{"0000:0c:00.0", "0000:22:00.0", "bind", "new_id", "remove_id", "uevent", "unbind"}));
  EXPECT_EQ(*sysfs.link_name("sys/bus/pci/drivers/amdgpu/0000:0c:00.0"), "0000:0c:00.0");
  EXPECT_EQ(*sysfs.read(kGpu0 + "current_compute_partition"), "SPX");
  EXPECT_EQ(*sysfs.read(kGpu0 + "available_compute_partition"), "SPX, DPX, QPX, CPX");
  EXPECT_EQ(*sysfs.read(kGpu0 + "available_memory_partition"), "NPS1, NPS4");
  EXPECT_EQ(*sysfs.read(kGpu0 + "product_name"), "AMD Instinct MI300X");
  EXPECT_EQ(kfd_gpu_nodes(sysfs), 2);  // one per GPU in SPX
}

TEST(FakeAmdgpuDriver, ComputeSwitchRecreatesOneKfdNodePerPartition) {
  FakeAmdgpuDriver driver(fixture(), nullptr);
  FakeAmdgpuSysfs sysfs(driver);
  ASSERT_TRUE(sysfs.write(kGpu0 + "current_compute_partition", "cpx\n"));
  EXPECT_EQ(*sysfs.read(kGpu0 + "current_compute_partition"), "CPX");
  EXPECT_EQ(kfd_gpu_nodes(sysfs), 8 + 1);
  // Partition 7 of GPU 0: its own render node and the partition id in location_id's top bits.
  auto props = *sysfs.read("sys/class/kfd/kfd/topology/nodes/8/properties");
  EXPECT_NE(props.find("drm_render_minor 135\n"), std::string::npos) << props;
  EXPECT_NE(props.find(fmt::format("location_id {}\n", (7u << 28) | (0x0cu << 8))), std::string::npos) << props;
  EXPECT_NE(props.find("simd_count 152\n"), std::string::npos) << props;
}

TEST(FakeAmdgpuDriver, RefusesModesTheGpuOrItsMemoryModeCannotRun) {
  FakeAmdgpuDriver driver(fixture(), nullptr);
  FakeAmdgpuSysfs sysfs(driver);
  EXPECT_EQ(sysfs.write(kGpu0 + "current_compute_partition", "TPX").error(), EINVAL);  // needs 6 XCDs
  EXPECT_EQ(sysfs.write(kGpu0 + "current_compute_partition", "XYZ").error(), EINVAL);
  EXPECT_EQ(sysfs.write(kGpu0 + "available_compute_partition", "CPX").error(), EACCES);
  EXPECT_TRUE(sysfs.write(kGpu0 + "current_compute_partition", "SPX"));  // already: no change
  // A memory-partition write is only a request until the driver reloads.
  ASSERT_TRUE(sysfs.write(kGpu0 + "current_memory_partition", "NPS4"));
  EXPECT_EQ(*sysfs.read(kGpu0 + "current_memory_partition"), "NPS1");
  EXPECT_EQ(sysfs.write(kGpu0 + "current_memory_partition", "NPS8").error(), EINVAL);
}

TEST(FakeAmdgpuDriver, BusyGpuKeepsItsMode) {
  std::vector<int> asked;
  FakeAmdgpuDriver driver(fixture(), [&](const std::vector<int>& minors) {
    asked = minors;
    return true;
  });
  FakeAmdgpuSysfs sysfs(driver);
  EXPECT_EQ(sysfs.write("sys/bus/pci/devices/0000:22:00.0/current_compute_partition", "QPX").error(), EBUSY);
  EXPECT_EQ(driver.compute_partition(1), "SPX");
  EXPECT_EQ(asked, (std::vector<int>{136, 137, 138, 139, 140, 141, 142, 143}));
}

TEST(RenderNodeUsers, AnOpenRenderNodeIsSeenAndAClosedOneIsNot) {
  const auto root = std::filesystem::temp_directory_path() / ("fake-amdgpu-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "dev/dri");
  std::ofstream(root / "dev/dri/renderD130").flush();
  EXPECT_FALSE(render_nodes_in_use(root.string(), {128, 129, 130}));
  const int fd = ::open((root / "dev/dri/renderD130").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(render_nodes_in_use(root.string(), {128, 129, 130}));
  EXPECT_FALSE(render_nodes_in_use(root.string(), {128, 129}));
  ::close(fd);
  EXPECT_FALSE(render_nodes_in_use(root.string(), {130}));
  std::filesystem::remove_all(root);
}

TEST(FakeAmdgpuFixture, NamesTheBadField) {
  std::ifstream in(kFixture);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto bad = text;
  bad.replace(bad.find("\"SPX\""), 5, "\"SPY\"");
  auto r = parse_fake_amdgpu_fixture(bad, "f.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "f.json: gpus[0].compute_partition: 'SPY': expected SPX, DPX, QPX or CPX");
  bad = text;
  bad.replace(bad.find("0000:22:00.0"), 12, "0000:0c:00.0");
  r = parse_fake_amdgpu_fixture(bad, "f.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "f.json: gpus[1].bdf: 0000:0c:00.0 listed twice");
}

}  // namespace
}  // namespace vgpu::fake
