// The fake library's own NVML semantics, called through the raw C ABI the way any NVML client
// would: return codes the real library documents for each misuse.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>

#include "fake_env.h"
#include "nvml_abi.h"

namespace vgpu::test {
namespace {

class FakeAbi : public FakeNvml {
 protected:
  void SetUp() override {
    FakeNvml::SetUp();
    lib_ = ::dlopen(VGPU_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    // Left mapped like the production loader does; dlopen refcounts it.
    FakeNvml::TearDown();
  }
  template <class Fn>
  Fn* sym(const char* name) {
    auto* p = reinterpret_cast<Fn*>(::dlsym(lib_, name));
    EXPECT_NE(p, nullptr) << name;
    return p;
  }
  nvmlDevice_t device0() {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(sym<decltype(nvmlDeviceGetHandleByIndex_v2)>("nvmlDeviceGetHandleByIndex_v2")(0, &d), NVML_SUCCESS);
    return d;
  }
  nvmlReturn_t init() { return sym<decltype(nvmlInit_v2)>("nvmlInit_v2")(); }
  nvmlReturn_t shutdown() { return sym<decltype(nvmlShutdown)>("nvmlShutdown")(); }
  void* lib_ = nullptr;
};

TEST_F(FakeAbi, LibraryCarriesTheRealSoname) {
  std::ifstream f(VGPU_FAKE_NVML_PATH, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(bytes.find("libnvidia-ml.so.1"), std::string::npos);
}

TEST_F(FakeAbi, CallsBeforeInitAreUninitializedAndInitIsRefcounted) {
  unsigned n = 0;
  auto count = sym<decltype(nvmlDeviceGetCount_v2)>("nvmlDeviceGetCount_v2");
  EXPECT_EQ(count(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(shutdown(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(init(), NVML_SUCCESS);
  ASSERT_EQ(init(), NVML_SUCCESS);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(count(&n), NVML_SUCCESS) << "one init is still outstanding";
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(count(&n), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeAbi, DestroyingAGpuInstanceWithAComputeInstanceIsInUse) {
  ASSERT_EQ(init(), NVML_SUCCESS);
  nvmlDevice_t dev = device0();
  nvmlGpuInstancePlacement_t pl{0, 4};
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(sym<decltype(nvmlDeviceCreateGpuInstanceWithPlacement)>("nvmlDeviceCreateGpuInstanceWithPlacement")(
                dev, 9, &pl, &gi),
            NVML_SUCCESS);
  nvmlComputeInstanceProfileInfo_t ci_prof{};
  ASSERT_EQ(sym<decltype(nvmlGpuInstanceGetComputeInstanceProfileInfo)>("nvmlGpuInstanceGetComputeInstanceProfileInfo")(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_prof),
            NVML_SUCCESS);
  EXPECT_EQ(ci_prof.sliceCount, 3u);
  nvmlComputeInstanceProfileInfo_t too_big{};
  EXPECT_EQ(sym<decltype(nvmlGpuInstanceGetComputeInstanceProfileInfo)>("nvmlGpuInstanceGetComputeInstanceProfileInfo")(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &too_big),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlComputeInstance_t ci = nullptr;
  auto create_ci = sym<decltype(nvmlGpuInstanceCreateComputeInstance)>("nvmlGpuInstanceCreateComputeInstance");
  ASSERT_EQ(create_ci(gi, ci_prof.id, &ci), NVML_SUCCESS);
  nvmlComputeInstance_t second = nullptr;
  EXPECT_EQ(create_ci(gi, ci_prof.id, &second), NVML_ERROR_INSUFFICIENT_RESOURCES) << "the GI is fully used";
  auto destroy_gi = sym<decltype(nvmlGpuInstanceDestroy)>("nvmlGpuInstanceDestroy");
  EXPECT_EQ(destroy_gi(gi), NVML_ERROR_IN_USE);
  auto destroy_ci = sym<decltype(nvmlComputeInstanceDestroy)>("nvmlComputeInstanceDestroy");
  ASSERT_EQ(destroy_ci(ci), NVML_SUCCESS);
  EXPECT_EQ(destroy_ci(ci), NVML_ERROR_INVALID_ARGUMENT) << "a destroyed CI's handle is invalid";
  ASSERT_EQ(destroy_gi(gi), NVML_SUCCESS);
  EXPECT_EQ(destroy_gi(gi), NVML_ERROR_INVALID_ARGUMENT) << "a destroyed GI's handle is invalid";
  nvmlGpuInstanceInfo_t info{};
  EXPECT_EQ(sym<decltype(nvmlGpuInstanceGetInfo)>("nvmlGpuInstanceGetInfo")(gi, &info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(FakeAbi, MadeUpHandlesAreInvalidArgument) {
  ASSERT_EQ(init(), NVML_SUCCESS);
  int junk = 0;
  char name[96];
  EXPECT_EQ(
      sym<decltype(nvmlDeviceGetName)>("nvmlDeviceGetName")(reinterpret_cast<nvmlDevice_t>(&junk), name, sizeof name),
      NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sym<decltype(nvmlGpuInstanceDestroy)>("nvmlGpuInstanceDestroy")(reinterpret_cast<nvmlGpuInstance_t>(&junk)),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(sym<decltype(nvmlDeviceGetHandleByIndex_v2)>("nvmlDeviceGetHandleByIndex_v2")(1, &d),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(FakeAbi, ProfileInfoChecksStructVersionAndIndexRange) {
  ASSERT_EQ(init(), NVML_SUCCESS);
  auto info_v = sym<decltype(nvmlDeviceGetGpuInstanceProfileInfoV)>("nvmlDeviceGetGpuInstanceProfileInfoV");
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = 1;
  EXPECT_EQ(info_v(device0(), 0, &info), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  info.version = nvmlGpuInstanceProfileInfo_v2;
  EXPECT_EQ(info_v(device0(), NVML_GPU_INSTANCE_PROFILE_COUNT, &info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(info_v(device0(), NVML_GPU_INSTANCE_PROFILE_6_SLICE, &info), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(info_v(device0(), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 9u);
  EXPECT_STREQ(info.name, "MIG 3g.40gb");
  EXPECT_EQ(info.memorySizeMB, 40448u);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(FakeAbi, PossiblePlacementsCountFirstThenFill) {
  ASSERT_EQ(init(), NVML_SUCCESS);
  auto placements =
      sym<decltype(nvmlDeviceGetGpuInstancePossiblePlacements_v2)>("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  unsigned n = 0;
  ASSERT_EQ(placements(device0(), 15, nullptr, &n), NVML_SUCCESS);
  EXPECT_EQ(n, 4u);
  nvmlGpuInstancePlacement_t buf[4];
  unsigned small = 2;
  EXPECT_EQ(placements(device0(), 15, buf, &small), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(placements(device0(), 15, buf, &n), NVML_SUCCESS);
  EXPECT_EQ(buf[3].start, 6u);
  EXPECT_EQ(buf[3].size, 2u);
  EXPECT_EQ(placements(device0(), 77, nullptr, &n), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(FakeAbi, RecordedErrorsAreReplayed) {
  std::string path = dir_ + "/recorded.json";
  std::ofstream(path) << R"({"format": "vgpu-nvml-probe", "version": 1, "probe": {"errors": []},
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-x", "pci_bus_id": "00000000:00:06.0",
              "memory_mib": 81559, "minor_number": 0, "mig_mode": {"current": "disabled", "pending": "disabled"},
              "catalog_check": {"matches": false},
              "gpu_instance_profiles": [
                {"index": 0, "error": {"call": "x", "code": 3, "name": "NVML_ERROR_NOT_SUPPORTED", "text": "Not Supported"}},
                {"index": 2, "id": 9, "name": "MIG 3g.40gb", "slice_count": 3, "instance_count": 2,
                 "multiprocessor_count": 60, "memory_size_mib": 40448,
                 "placements_error": {"code": 4}}]}]})";
  ::setenv("VGPU_FAKE_NVML_FIXTURE", path.c_str(), 1);
  ASSERT_EQ(init(), NVML_SUCCESS);
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = nvmlGpuInstanceProfileInfo_v2;
  auto info_v = sym<decltype(nvmlDeviceGetGpuInstanceProfileInfoV)>("nvmlDeviceGetGpuInstanceProfileInfoV");
  EXPECT_EQ(info_v(device0(), 0, &info), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(info_v(device0(), 2, &info), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(sym<decltype(nvmlDeviceGetGpuInstancePossiblePlacements_v2)>(
                "nvmlDeviceGetGpuInstancePossiblePlacements_v2")(device0(), 9, nullptr, &n),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(FakeAbi, MalformedFixtureFailsInitAndNamesTheField) {
  std::string path = dir_ + "/bad.json";
  std::ofstream(path) << R"({"format": "vgpu-nvml-fixture", "version": 1, "gpus": [{"index": 0, "nmae": "x"}]})";
  ::setenv("VGPU_FAKE_NVML_FIXTURE", path.c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(init(), NVML_ERROR_UNKNOWN);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(path + ".gpus[0].nmae: unknown field (known here: "), std::string::npos) << err;
}

}  // namespace
}  // namespace vgpu::test
