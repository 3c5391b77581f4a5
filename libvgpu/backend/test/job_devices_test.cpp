#include <gtest/gtest.h>

#include "vgpu/backend/backend_devices.h"

namespace vgpu {
namespace {

constexpr const char* kFixture = VGPU_SOURCE_DIR "/fakenvml/fixtures/mig-minors-8gpu.txt";

GpuInfo gpu_with_minor(int minor) {
  GpuInfo g;
  g.index = minor;
  g.uuid = "GPU-test";
  g.minor = minor;
  return g;
}

InstanceInfo instance(int gi, int ci) {
  InstanceInfo i;
  i.gi_id = gi;
  i.ci_id = ci;
  i.mig_uuid = "MIG-11111111-2222-3333-4444-555555555555";
  return i;
}

TEST(MigMinors, ReadsGiAndCiAccessMinorsFromTheDriverFile) {
  auto m = MigMinors::load(kFixture);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->gi_access(0, 0), 3);
  EXPECT_EQ(m->ci_access(0, 0, 0), 4);
  EXPECT_EQ(m->gi_access(0, 1), 12);
  EXPECT_EQ(m->ci_access(0, 1, 0), 13);
  EXPECT_EQ(m->gi_access(1, 0), 138);
  EXPECT_EQ(m->gi_access(8, 0), std::nullopt);
}

TEST(MigMinors, RejectsMalformedLinesNamingFileAndLine) {
  auto m = MigMinors::parse("config 1\ngpu0/gi1/access 12\ngpu0/gi1/acess 13\n", "mig-minors");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::corrupt);
  EXPECT_EQ(m.error().message, "mig-minors:3: 'gpu0/gi1/acess 13': expected the entry to end in /access");
  EXPECT_FALSE(MigMinors::parse("gpu0/gi1/access twelve\n", "x"));
  EXPECT_FALSE(MigMinors::parse("gpu0/gi1/access 12\ngpu0/gi1/access 14\n", "x"));
  EXPECT_FALSE(MigMinors::parse("gpu0/gi1/ci/access 12\n", "x"));
}

TEST(MigMinors, MissingFileIsUnavailable) {
  auto m = MigMinors::load("/nonexistent/mig-minors");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::unavailable);
}

TEST(JobDevices, ListsGpuControlUvmAndBothCapabilityFiles) {
  auto m = MigMinors::load(kFixture);
  ASSERT_TRUE(m);
  auto d = job_devices(gpu_with_minor(1), instance(2, 0), *m);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->mig_uuid, "MIG-11111111-2222-3333-4444-555555555555");
  // gpu1/gi2/access = 3 + 135 + 2*9 = 156, its ci0 is the next minor.
  EXPECT_EQ(d->device_files,
            (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                      "/dev/nvidia-caps/nvidia-cap156", "/dev/nvidia-caps/nvidia-cap157"}));
}

TEST(JobDevices, AWholeGpuIsItsOwnDeviceFileWithoutCapabilities) {
  auto m = MigMinors::parse("gpu1/gi1/access 12\n", "x");
  ASSERT_TRUE(m);
  InstanceInfo whole = instance(0, 0);
  whole.profile_id = kWholeGpuProfileId;
  whole.mig_uuid = "GPU-00000000-1111-2222-3333-444444444444";
  auto d = job_devices(gpu_with_minor(1), whole, *m);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->mig_uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(d->device_files, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"}));
}

TEST(JobDevices, InstanceWithoutComputeInstanceHasNoMigDevice) {
  auto m = MigMinors::parse("gpu0/gi1/access 12\n", "x");
  ASSERT_TRUE(m);
  InstanceInfo i = instance(1, 0);
  i.ci_id.reset();
  auto d = job_devices(gpu_with_minor(0), i, *m);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ErrorCode::not_found);
}

TEST(JobDevices, MissingCapabilityEntryNamesIt) {
  auto m = MigMinors::parse("gpu0/gi1/access 12\n", "x");
  ASSERT_TRUE(m);
  auto d = job_devices(gpu_with_minor(0), instance(1, 0), *m);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "gpu 0 (GPU-test) gi 1: no gpu0/gi1/ci0/access in mig-minors");
}

}  // namespace
}  // namespace vgpu
