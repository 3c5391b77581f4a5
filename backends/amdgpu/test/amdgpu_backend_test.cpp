#include "amdgpu_backend.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "fake_amdgpu_driver.h"
#include "fake_amdgpu_sysfs.h"

namespace vgpu::amdgpu {
namespace {

using fake::FakeAmdgpuDriver;
using fake::FakeAmdgpuSysfs;

fake::FakeAmdgpuFixture fixture() {
  auto f = fake::load_fake_amdgpu_fixture(std::string(VGPU_SOURCE_DIR) + "/fakeamdgpu/fixtures/mi300x-2gpu.json");
  EXPECT_TRUE(f) << f.error().message;
  return *f;
}

struct Node {
  bool busy = false;
  FakeAmdgpuDriver driver{fixture(), [this](const std::vector<int>&) { return busy; }};
  FakeAmdgpuSysfs sysfs{driver};
  Backend backend{sysfs, Options{std::chrono::milliseconds(2000), std::chrono::milliseconds(1)}};
};

int cpx() { return static_cast<int>(AmdPartitionMode::cpx); }
int qpx() { return static_cast<int>(AmdPartitionMode::qpx); }

TEST(AmdgpuBackend, DiscoversPartitionableGpusWithTheirModel) {
  Node n;
  auto gpus = n.backend.discover();
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].pci_bus_id, "0000:0c:00.0");
  EXPECT_EQ((*gpus)[0].product_name, "AMD Instinct MI300X");
  EXPECT_EQ((*gpus)[0].memory_mib, 196608);
  EXPECT_EQ((*gpus)[0].uuid, "GPU-123456789abcdef0");
  EXPECT_TRUE(n.backend.unavailable_reason().empty());
  // What the device offers matches the built-in catalog, mode by mode.
  auto model = n.backend.read_catalog(1);
  ASSERT_TRUE(model);
  EXPECT_TRUE(compare_models(*Catalog::builtin().find_model("MI300X-192GB"), *model).empty());
}

TEST(AmdgpuBackend, SpxIsOnePartitionSpanningTheGpu) {
  Node n;
  auto list = n.backend.list_instances(0);
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].profile, "spx.192gb");
  EXPECT_EQ((*list)[0].placement, (Placement{0, 8}));
  EXPECT_EQ((*list)[0].mig_uuid, "GPU-123456789abcdef0");
}

TEST(AmdgpuBackend, CreatingACpxPartitionSwitchesTheModeAndReturnsThatPartition) {
  Node n;
  auto made = n.backend.create_instance(0, cpx(), {5, 1});
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(made->gi_id, 5);
  EXPECT_EQ(made->profile, "cpx.24gb");
  EXPECT_EQ(made->placement, (Placement{5, 1}));
  EXPECT_EQ(n.driver.compute_partition(0), "CPX");
  EXPECT_EQ(n.driver.compute_partition(1), "SPX");
  auto parts = n.backend.partitions(0);
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 8u);
  EXPECT_EQ((*parts)[5].render_minor, 133);
  EXPECT_EQ((*parts)[5].uuid, made->mig_uuid);
  // Every partition has its own UUID, which is what the job is given.
  EXPECT_NE((*parts)[4].uuid, (*parts)[5].uuid);
  // A second partition of the same mode needs no switch, even while the GPU is busy.
  n.busy = true;
  auto second = n.backend.create_instance(0, cpx(), {2, 1});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->gi_id, 2);
  // "Destroying" one releases nothing: the mode, and so the partition, stays.
  EXPECT_TRUE(n.backend.destroy_instance(0, 5));
  EXPECT_EQ(n.backend.list_instances(0)->size(), 8u);
  EXPECT_FALSE(n.backend.destroy_instance(0, 9));
}

TEST(AmdgpuBackend, BusyGpuRefusesAnotherModeWithTheReason) {
  Node n;
  n.busy = true;
  auto made = n.backend.create_instance(1, qpx(), {2, 2});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ErrorCode::conflict);
  EXPECT_EQ(made.error().message,
            "amdgpu: GPU 0000:22:00.0: switching SPX -> QPX: Device or resource busy: a process still uses one of its "
            "partitions");
  EXPECT_EQ(n.driver.compute_partition(1), "SPX");
}

TEST(AmdgpuBackend, RefusesAPlacementThatIsNotAPartition) {
  Node n;
  auto made = n.backend.create_instance(0, qpx(), {1, 2});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message.find("{1,2} is not a partition of qpx.48gb"), std::string::npos)
      << made.error().message;
}

TEST(AmdgpuBackend, GpuInAnotherMemoryModeIsLeftOutAndSaysWhy) {
  auto f = fixture();
  f.gpus[1].memory_partition = "NPS4";
  f.gpus[1].compute_partition = "CPX";
  FakeAmdgpuDriver driver(f, nullptr);
  FakeAmdgpuSysfs sysfs(driver);
  Backend backend(sysfs);
  auto gpus = backend.discover();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->size(), 1u);
  EXPECT_EQ(
      backend.unavailable_reason(),
      "GPU 0000:22:00.0: memory partition NPS4: slurm-vgpu's MI300X-192GB catalog assumes NPS1; the GPU is left out");
}

TEST(AmdgpuBackend, NodeWithoutTheDriverHasNoGpusAndANote) {
  // A tree without the driver directory is a node without amdgpu.
  RootedSysfs bare("/nonexistent-sysfs-root");
  Backend backend(bare);
  auto gpus = backend.discover();
  ASSERT_TRUE(gpus);
  EXPECT_TRUE(gpus->empty());
  EXPECT_EQ(backend.unavailable_reason(), "no amdgpu driver: /sys/bus/pci/drivers/amdgpu does not exist");
}

}  // namespace
}  // namespace vgpu::amdgpu
