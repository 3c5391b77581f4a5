// The production NVML backend (dlopen + dlsym) against the fake libnvidia-ml.so.1.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_env.h"
#include "nvml_backend.h"
#include "vgpu/backend/backend_devices.h"
#include "vgpu/core/gpu_layout.h"

namespace vgpu::test {
namespace {

// NVML GPU-instance profile ids on H100-80GB (`nvidia-smi mig -lgip`).
constexpr int k1g10 = 19, k1g10me = 20, k2g20 = 14, k3g40 = 9, k7g80 = 0;

using NvmlBackendTest = FakeNvml;

// "MIG-" then hex groups of 8-4-4-4-12, as nvidia-smi -L prints them.
bool looks_like_mig_uuid(const std::string& s) {
  const std::string shape = "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
  if (s.size() != shape.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool hex = std::isxdigit(static_cast<unsigned char>(s[i])) && !std::isupper(static_cast<unsigned char>(s[i]));
    if (shape[i] == 'x' ? !hex : s[i] != shape[i]) return false;
  }
  return true;
}

std::string print_diffs(const std::vector<std::string>& diffs) {
  std::string s;
  for (const auto& d : diffs) s += "  " + d + "\n";
  return s;
}

TEST_F(NvmlBackendTest, DiscoversEveryGpuOfTheFixture) {
  use_fixture("h100-80gb-2gpu.json");
  auto b = nvml::Backend::open();
  ASSERT_EQ(b->unavailable_reason(), "");
  auto gpus = b->discover();
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& g1 = (*gpus)[1];
  EXPECT_EQ(g1.index, 1);
  EXPECT_EQ(g1.product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g1.uuid, "GPU-00000101-0000-4000-8000-000000004101");
  EXPECT_EQ(g1.pci_bus_id, "00000000:28:00.0");
  EXPECT_EQ(g1.memory_mib, 81559);
  EXPECT_EQ(g1.minor, 1);
  EXPECT_EQ(g1.mig_current, MigMode::enabled);
  EXPECT_EQ(g1.mig_pending, MigMode::enabled);
}

TEST_F(NvmlBackendTest, EightGpuNodeIsDiscoveredInIndexOrder) {
  use_fixture("h100-80gb-8gpu.json");
  auto gpus = nvml::Backend::open()->discover();
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ((*gpus)[static_cast<std::size_t>(i)].index, i);
}

struct CatalogCase {
  const char* fixture;
  const char* builtin;
};

class CatalogFromDevice : public FakeNvml, public ::testing::WithParamInterface<CatalogCase> {};

TEST_P(CatalogFromDevice, MatchesTheBuiltinCatalogExactly) {
  use_fixture(GetParam().fixture);
  auto b = nvml::Backend::open();
  auto model = b->read_catalog(0);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->name, GetParam().builtin);
  const GpuModel* builtin = Catalog::builtin().find_model(GetParam().builtin);
  ASSERT_NE(builtin, nullptr);
  auto diffs = compare_models(*builtin, *model);
  EXPECT_TRUE(diffs.empty()) << "device catalog differs from built-in " << builtin->name << ":\n" << print_diffs(diffs);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CatalogFromDevice,
                         ::testing::Values(CatalogCase{"h100-80gb-1gpu.json", "H100-80GB"},
                                           CatalogCase{"h100-80gb-capture.json", "H100-80GB"},
                                           CatalogCase{"a100-40gb-1gpu.json", "A100-40GB"},
                                           CatalogCase{"a30-24gb-1gpu.json", "A30-24GB"}));

TEST_F(NvmlBackendTest, CreateAtLegalPlacementGivesGiCiAndMigUuid) {
  auto b = nvml::Backend::open();
  auto inst = b->create_instance(0, k3g40, {4, 4});
  ASSERT_TRUE(inst) << inst.error().message;
  EXPECT_EQ(inst->profile_id, k3g40);
  EXPECT_EQ(inst->placement, (Placement{4, 4}));
  EXPECT_EQ(inst->profile, "3g.40gb");
  EXPECT_EQ(inst->ci_id, 0);
  EXPECT_TRUE(looks_like_mig_uuid(inst->mig_uuid)) << inst->mig_uuid;
  auto list = b->list_instances(0);
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front(), *inst);
}

TEST_F(NvmlBackendTest, MigUuidIsStableAcrossDestroyAndRecreate) {
  auto b = nvml::Backend::open();
  auto first = b->create_instance(0, k1g10, {6, 1});
  ASSERT_TRUE(first);
  ASSERT_TRUE(b->destroy_instance(0, first->gi_id));
  auto second = b->create_instance(0, k1g10, {6, 1});
  ASSERT_TRUE(second);
  EXPECT_EQ(first->mig_uuid, second->mig_uuid);
  EXPECT_EQ(first->gi_id, second->gi_id);
}

TEST_F(NvmlBackendTest, IllegalPlacementIsInvalidArgumentWithTheCallSpelledOut) {
  auto b = nvml::Backend::open();
  auto inst = b->create_instance(0, k3g40, {1, 4});
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(inst.error().message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, {1,4}): Invalid Argument");
}

TEST_F(NvmlBackendTest, UnknownProfileIdIsInvalidArgument) {
  auto inst = nvml::Backend::open()->create_instance(0, 99, {0, 1});
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 99, {0,1}): Invalid Argument");
}

TEST_F(NvmlBackendTest, OverlappingPlacementIsInsufficientResources) {
  auto b = nvml::Backend::open();
  ASSERT_TRUE(b->create_instance(0, k3g40, {4, 4}));
  auto again = b->create_instance(0, k3g40, {4, 4});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::no_capacity);
  EXPECT_EQ(again.error().message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, {4,4}): Insufficient Resources");
  auto inside = b->create_instance(0, k1g10, {5, 1});
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 19, {5,1}): Insufficient Resources");
  EXPECT_TRUE(b->create_instance(0, k1g10, {3, 1})) << "the free half must still be usable";
}

TEST_F(NvmlBackendTest, ProfileInstanceLimitIsInsufficientResources) {
  auto b = nvml::Backend::open();
  ASSERT_TRUE(b->create_instance(0, k1g10me, {0, 1}));
  auto second = b->create_instance(0, k1g10me, {1, 1});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 20, {1,1}): Insufficient Resources");
}

TEST_F(NvmlBackendTest, ComputeSlicesRunOutBeforeMemorySlices) {
  // Seven 1g instances use all 7 compute slices; memory slice 7 stays free but cannot be used.
  auto b = nvml::Backend::open();
  for (int s = 0; s < 7; ++s) ASSERT_TRUE(b->create_instance(0, k1g10, {s, 1})) << s;
  auto full = b->create_instance(0, k7g80, {0, 8});
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ErrorCode::no_capacity);
}

TEST_F(NvmlBackendTest, DestroyRemovesComputeThenGpuInstance) {
  auto b = nvml::Backend::open();
  auto inst = b->create_instance(0, k2g20, {2, 2});
  ASSERT_TRUE(inst);
  ASSERT_TRUE(b->destroy_instance(0, inst->gi_id));
  auto list = b->list_instances(0);
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->empty());
  EXPECT_TRUE(b->create_instance(0, k2g20, {2, 2})) << "the slices must be free again";
}

TEST_F(NvmlBackendTest, FailedComputeInstanceLeavesNoGpuInstanceBehind) {
  // A device that offers only 1-slice compute instances: a 3g GI can be made but not its CI.
  std::ifstream in(fixture("h100-80gb-1gpu.json"));
  auto j = nlohmann::json::parse(in);
  j["gpus"][0]["compute_instance_profiles"] =
      nlohmann::json::array({{{"index", 0}, {"id", 0}, {"slice_count", 1}, {"multiprocessor_count", 16}}});
  std::string text = j.dump();
  std::string path = dir_ + "/one-slice-ci.json";
  std::ofstream(path) << text;
  ::setenv("VGPU_FAKE_NVML_FIXTURE", path.c_str(), 1);
  auto b = nvml::Backend::open();
  ASSERT_EQ(b->unavailable_reason(), "");
  auto inst = b->create_instance(0, k3g40, {0, 4});
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().message, "nvmlGpuInstanceGetComputeInstanceProfileInfo(gpu 0, gi 1, index 2): Not Supported");
  auto list = b->list_instances(0);
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_TRUE(list->empty());
  EXPECT_TRUE(b->create_instance(0, k1g10, {0, 1})) << "1-slice CIs still work";
}

TEST_F(NvmlBackendTest, DestroyingAnUnknownInstanceIsNotFound) {
  auto r = nvml::Backend::open()->destroy_instance(0, 5);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_EQ(r.error().message, "nvmlDeviceGetGpuInstanceById(gpu 0, gi 5): Not Found");
}

TEST_F(NvmlBackendTest, CreatedInOneProcessIsSeenAndDestroyedInAnother) {
  auto made = helper("create 0 9 0 4");
  ASSERT_EQ(made.status, 0) << made.out;
  auto b = nvml::Backend::open();
  auto list = b->list_instances(0);
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 1u);
  const InstanceInfo& inst = list->front();
  EXPECT_EQ(made.out, fmt::format("gi {} ci 0 {}\n", inst.gi_id, inst.mig_uuid));
  ASSERT_TRUE(b->destroy_instance(0, inst.gi_id));
  auto after = helper("list 0");
  EXPECT_EQ(after.status, 0);
  EXPECT_EQ(after.out, "");
}

// nvml.h: a process with a compute context is listed, with its GPU instance in MIG mode, and the
// compute instance it uses cannot be destroyed (IN_USE); the driver drops the context when the
// process exits. Listing every instance's processes on the GPU's own handle is for root only.
TEST_F(NvmlBackendTest, AProcessWithAContextIsListedWithItsInstanceUntilItExits) {
  auto b = nvml::Backend::open();
  auto made = b->create_instance(0, k3g40, {0, 4});
  ASSERT_TRUE(made) << made.error().message;
  if (::geteuid() != 0) {
    auto refused = b->compute_processes(0);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "nvmlDeviceGetComputeRunningProcesses_v3(gpu 0): Insufficient Permissions");
    return;
  }
  ASSERT_TRUE(b->compute_processes(0));
  EXPECT_TRUE(b->compute_processes(0)->empty());
  FILE* holder = ::popen(fmt::format("{} hold 0 {} 60", VGPU_NVML_TEST_HELPER, made->gi_id).c_str(), "r");
  ASSERT_NE(holder, nullptr);
  int pid = 0;
  ASSERT_EQ(std::fscanf(holder, "holding %d", &pid), 1);
  auto listed = b->compute_processes(0);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(*listed, (std::vector<GpuProcess>{{pid, made->gi_id}}));
  auto busy = b->destroy_instance(0, made->gi_id);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().message,
            fmt::format("nvmlComputeInstanceDestroy(gpu 0, gi {}, ci 0): In use by another client", made->gi_id));
  ::kill(pid, SIGTERM);
  ::pclose(holder);
  listed = b->compute_processes(0);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_TRUE(listed->empty()) << "the driver drops an exited process's context";
  EXPECT_TRUE(b->destroy_instance(0, made->gi_id));
}

TEST_F(NvmlBackendTest, ErrorsFromAnotherProcessCarryTheNvmlText) {
  ASSERT_EQ(helper("create 0 9 4 4").status, 0);
  auto clash = helper("create 0 9 4 4");
  EXPECT_NE(clash.status, 0);
  EXPECT_EQ(clash.out, "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, {4,4}): Insufficient Resources\n");
}

TEST_F(NvmlBackendTest, ConcurrentCreatesFromTwoProcessesNeverOverlap) {
  // Both processes race for the same slices with different profiles; the fake serialises them
  // under its state-file lock exactly as the driver does, so what exists must be placeable.
  for (int round = 0; round < 3; ++round) {
    std::filesystem::remove(state_);
    FILE* a = ::popen((std::string(VGPU_NVML_TEST_HELPER) + " fill 0 19").c_str(), "r");
    FILE* c = ::popen((std::string(VGPU_NVML_TEST_HELPER) + " fill 0 14").c_str(), "r");
    ASSERT_TRUE(a && c);
    char buf[64] = {}, buf2[64] = {};
    ASSERT_NE(std::fgets(buf, sizeof buf, a), nullptr);
    ASSERT_NE(std::fgets(buf2, sizeof buf2, c), nullptr);
    EXPECT_EQ(::pclose(a), 0);
    EXPECT_EQ(::pclose(c), 0);
    int made_1g = 0, made_2g = 0;
    ASSERT_EQ(std::sscanf(buf, "created %d", &made_1g), 1) << buf;
    ASSERT_EQ(std::sscanf(buf2, "created %d", &made_2g), 1) << buf2;
    auto list = nvml::Backend::open()->list_instances(0);
    ASSERT_TRUE(list) << list.error().message;
    EXPECT_EQ(static_cast<int>(list->size()), made_1g + made_2g);
    const GpuModel& h100 = *Catalog::builtin().find_model("H100-80GB");
    GpuLayout layout(h100);
    for (const auto& i : *list) {
      const Profile* p = h100.find_profile_by_nvml_id(i.profile_id);
      ASSERT_NE(p, nullptr);
      auto placed = layout.place(*p, i.placement);
      EXPECT_TRUE(placed) << "round " << round << ": " << layout.describe() << " + " << p->name;
    }
    // Each process tried every placement, so the GPU ends up with no room for either profile.
    EXPECT_FALSE(layout.fits(*h100.find_profile_by_nvml_id(k2g20))) << layout.describe();
  }
}

TEST_F(NvmlBackendTest, MigDisabledGpuReportsItAndRefusesCreation) {
  use_fixture("h100-80gb-capture.json");
  auto b = nvml::Backend::open();
  auto gpus = b->discover();
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ(gpus->front().mig_current, MigMode::disabled);
  auto inst = b->create_instance(0, k3g40, {0, 4});
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().code, ErrorCode::unavailable);
  EXPECT_EQ(inst.error().message, "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, {0,4}): Not Supported");
  auto snap = take_snapshot(*b);
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_TRUE(snap->instances.empty());
  EXPECT_EQ(snap->notes, std::vector<std::string>{"gpu 0: MIG mode disabled, no instances"});
}

// nvmlDeviceSetMigMode through the backend: an idle Hopper GPU switches at once and then takes
// instances; an instance keeps a disable pending (IN_USE) until it is gone.
TEST_F(NvmlBackendTest, AnIdleHopperGpuSwitchesMigModeAtOnceAndAnInstanceHoldsItOn) {
  use_fixture("h100-80gb-capture.json");
  auto b = nvml::Backend::open();
  auto on = b->set_mig_mode(0, MigMode::enabled);
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_EQ(*on, MigModeSwitch::activated);
  auto gpus = b->discover();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->front().mig_current, MigMode::enabled);
  auto inst = b->create_instance(0, k3g40, {0, 4});
  ASSERT_TRUE(inst) << inst.error().message;

  auto off = b->set_mig_mode(0, MigMode::disabled);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(*off, MigModeSwitch::pending_in_use);
  gpus = b->discover();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->front().mig_current, MigMode::enabled);
  EXPECT_EQ(gpus->front().mig_pending, MigMode::disabled);

  ASSERT_TRUE(b->destroy_instance(0, inst->gi_id));
  off = b->set_mig_mode(0, MigMode::disabled);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(*off, MigModeSwitch::activated);
  gpus = b->discover();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->front().mig_current, MigMode::disabled);
}

TEST_F(NvmlBackendTest, AnAmpereGpuMigSwitchStaysPendingUntilAReset) {
  use_fixture("a100-40gb-1gpu.json");
  auto b = nvml::Backend::open();
  auto off = b->set_mig_mode(0, MigMode::disabled);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(*off, MigModeSwitch::pending_reset_required);
  auto gpus = b->discover();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->front().mig_current, MigMode::enabled);
  EXPECT_EQ(gpus->front().mig_pending, MigMode::disabled);
}

TEST_F(NvmlBackendTest, AGpuWithoutMigRefusesAMigModeWithTheCallSpelledOut) {
  use_fixture("l40s-48gb-1gpu.json");
  auto on = nvml::Backend::open()->set_mig_mode(0, MigMode::enabled);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().message, "nvmlDeviceSetMigMode(gpu 0, enabled): Not Supported");
}

TEST_F(NvmlBackendTest, AbsentLibraryMeansNoGpusNotAnError) {
  ::setenv("VGPU_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto b = nvml::Backend::open();
  auto gpus = b->discover();
  ASSERT_TRUE(gpus) << gpus.error().message;
  EXPECT_TRUE(gpus->empty());
  EXPECT_NE(b->unavailable_reason().find("/nonexistent/libnvidia-ml.so.1 not loadable"), std::string::npos)
      << b->unavailable_reason();
  auto snap = take_snapshot(*b);
  ASSERT_TRUE(snap);
  EXPECT_TRUE(snap->gpus.empty());
  ASSERT_EQ(snap->notes.size(), 1u);
  auto inst = b->create_instance(0, k3g40, {0, 4});
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().code, ErrorCode::unavailable);
}

TEST_F(NvmlBackendTest, DriverNotLoadedMeansNoGpus) {
  ::unsetenv("VGPU_FAKE_NVML_FIXTURE");  // the fake's stand-in for a node without the driver
  auto b = nvml::Backend::open();
  auto gpus = b->discover();
  ASSERT_TRUE(gpus);
  EXPECT_TRUE(gpus->empty());
  EXPECT_EQ(b->unavailable_reason(), std::string("nvmlInit_v2(): Driver Not Loaded (") + VGPU_FAKE_NVML_PATH + ")");
}

TEST_F(NvmlBackendTest, JobDevicesUseGpuMinorAndCapsMinorsOfTheInstance) {
  use_fixture("h100-80gb-2gpu.json");
  auto b = nvml::Backend::open();
  auto gpus = b->discover();
  ASSERT_TRUE(gpus);
  auto inst = b->create_instance(1, k3g40, {0, 4});
  ASSERT_TRUE(inst) << inst.error().message;
  auto minors = MigMinors::load(fixture("mig-minors-8gpu.txt"));
  ASSERT_TRUE(minors) << minors.error().message;
  auto dev = job_devices((*gpus)[1], *inst, *minors);
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_EQ(dev->mig_uuid, inst->mig_uuid);
  int gi_cap = 3 + 135 + inst->gi_id * 9;  // layout of the fixture file: 15 GIs x (1 + 8 CIs) per GPU
  EXPECT_EQ(dev->device_files, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                                         fmt::format("/dev/nvidia-caps/nvidia-cap{}", gi_cap),
                                                         fmt::format("/dev/nvidia-caps/nvidia-cap{}", gi_cap + 1)}));
}

TEST_F(NvmlBackendTest, SnapshotListsInstancesOfEveryGpu) {
  use_fixture("h100-80gb-2gpu.json");
  auto b = nvml::Backend::open();
  auto a = b->create_instance(0, k7g80, {0, 8});
  auto c = b->create_instance(1, k1g10, {6, 1});
  ASSERT_TRUE(a && c);
  auto snap = take_snapshot(*b);
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_EQ(snap->backend, "nvml");
  EXPECT_EQ(snap->instances, (std::vector<InstanceInfo>{*a, *c}));
  EXPECT_NE(a->mig_uuid, c->mig_uuid);
}

}  // namespace
}  // namespace vgpu::test
