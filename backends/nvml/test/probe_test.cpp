// vgpu-nvml-probe: its report, its replay as a fixture, and that it cannot change a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "fake_env.h"
#include "nvml_backend.h"

namespace vgpu::test {
namespace {

using nlohmann::json;
using ProbeTest = FakeNvml;

// A short GPM window keeps the tests quick; the probe's default is one second.
json run_probe(const std::string& extra = "--gpm-seconds 0.05") {
  auto r = run_command(std::string(VGPU_NVML_PROBE) + " " + extra);
  EXPECT_EQ(r.status, 0) << r.out;
  return json::parse(r.out);
}

// A reader over the fake replaying a probe recording kept in docs/hardware/<path>; with the file
// missing the fake refuses to initialise, which the caller's unavailable_reason() check reports.
std::unique_ptr<nvml::Reader> replay_recording(const std::string& path) {
  std::string recording = std::string(VGPU_SOURCE_DIR) + "/docs/hardware/" + path;
  EXPECT_TRUE(std::filesystem::exists(recording)) << recording;
  ::setenv("VGPU_FAKE_NVML_FIXTURE", recording.c_str(), 1);
  return nvml::Reader::open();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST_F(ProbeTest, BinaryDoesNotNameAnyMutatingNvmlCall) {
  std::string bytes = read_file(VGPU_NVML_PROBE);
  ASSERT_NE(bytes.find("nvmlDeviceGetGpuInstanceProfileInfoV"), std::string::npos)
      << "the probe must name the query calls it resolves, or this check proves nothing";
  for (const char* call :
       {"nvmlDeviceCreateGpuInstance", "nvmlGpuInstanceCreateComputeInstance", "nvmlGpuInstanceDestroy",
        "nvmlComputeInstanceDestroy", "nvmlDeviceSetMigMode", "nvmlDeviceResetGpuLockedClocks", "nvmlDeviceSet"})
    EXPECT_EQ(bytes.find(call), std::string::npos) << call;
}

TEST_F(ProbeTest, ReportsGpusAndACatalogMatchingTheBuiltin) {
  auto j = run_probe();
  EXPECT_EQ(j["format"], "vgpu-nvml-probe");
  ASSERT_EQ(j["gpus"].size(), 1u);
  const json& g = j["gpus"][0];
  EXPECT_EQ(g["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g["mig_mode"]["current"], "enabled");
  EXPECT_EQ(g["catalog_check"]["builtin_model"], "H100-80GB");
  EXPECT_EQ(g["catalog_check"]["differences"], json::array()) << g["catalog_check"].dump(1);
  EXPECT_EQ(g["catalog_check"]["matches"], true);
  EXPECT_EQ(g["gpu_instance_profiles"].size(), static_cast<std::size_t>(NVML_GPU_INSTANCE_PROFILE_COUNT));
  const json& absent = g["gpu_instance_profiles"][NVML_GPU_INSTANCE_PROFILE_6_SLICE];
  EXPECT_EQ(absent["error"]["name"], "NVML_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(absent["error"]["text"], "Not Supported");
  EXPECT_EQ(absent["error"]["call"], "nvmlDeviceGetGpuInstanceProfileInfoV(gpu 0, index 6)");
}

TEST_F(ProbeTest, ListsExistingInstancesWithoutTouchingThem) {
  ASSERT_EQ(helper("create 0 9 0 4").status, 0);
  std::string before = read_file(state_);
  auto j = run_probe();
  ASSERT_EQ(j["gpus"][0]["instances"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["instances"][0]["placement"], json({{"start", 0}, {"size", 4}}));
  EXPECT_EQ(read_file(state_), before);
}

TEST_F(ProbeTest, ReportsEachInstancesGpmUtilisationAndMemory) {
  ASSERT_EQ(helper("create 0 9 0 4").status, 0);
  auto j = run_probe();
  std::string uuid = j["gpus"][0]["instances"][0]["mig_uuid"];
  auto loaded = run_command(std::string(VGPU_FAKE_NVML_LOAD) + " " + uuid + " 70 20 1000 2>&1");
  ASSERT_EQ(loaded.status, 0) << loaded.out;
  j = run_probe();
  EXPECT_EQ(j["probe"]["errors"], json::array()) << j["probe"].dump(1);
  const json& gpm = j["gpus"][0]["gpm"];
  ASSERT_EQ(gpm["readings"].size(), 1u) << gpm.dump(1);
  const json& r = gpm["readings"][0];
  EXPECT_EQ(r["uuid"], uuid);
  EXPECT_EQ(r["gi_id"], j["gpus"][0]["instances"][0]["gi_id"]);
  EXPECT_NEAR(r["sm_utilization"].get<double>(), 0.70, 1e-9);
  EXPECT_NEAR(r["dram_bandwidth_utilization"].get<double>(), 0.20, 1e-9);
  EXPECT_EQ(r["memory_used_mib"], 1000);
  EXPECT_EQ(r["memory_total_mib"], 40448);
  EXPECT_GE(gpm["interval_s"].get<double>(), 0.05);
  // --gpm-seconds 0 leaves the sampling out (OutputReplaysAsAFixture replays a report with it).
  EXPECT_FALSE(run_probe("--gpm-seconds 0")["gpus"][0].contains("gpm"));
}

TEST_F(ProbeTest, MigDisabledCaptureStillYieldsTheCatalog) {
  use_fixture("h100-80gb-capture.json");
  auto j = run_probe();
  const json& g = j["gpus"][0];
  EXPECT_EQ(g["mig_mode"], json({{"current", "disabled"}, {"pending", "disabled"}}));
  EXPECT_EQ(g["pci_bus_id"], "00000000:00:06.0");
  EXPECT_EQ(g["memory_mib"], 81559);
  EXPECT_EQ(g["catalog_check"]["matches"], true) << g["catalog_check"].dump(1);
  EXPECT_FALSE(g.contains("instances"));
}

TEST_F(ProbeTest, OutputReplaysAsAFixture) {
  use_fixture("h100-80gb-2gpu.json");
  std::string recording = dir_ + "/recording.json";
  auto wrote = run_command(std::string(VGPU_NVML_PROBE) + " -o " + recording);
  ASSERT_EQ(wrote.status, 0) << wrote.out;
  EXPECT_EQ(wrote.out, "") << "with -o nothing goes to stdout";
  auto original = nvml::Backend::open();
  auto gpus = original->discover();
  auto model = original->read_catalog(1);
  ASSERT_TRUE(gpus && model);
  original.reset();
  ::setenv("VGPU_FAKE_NVML_FIXTURE", recording.c_str(), 1);
  auto replay = nvml::Backend::open();
  ASSERT_EQ(replay->unavailable_reason(), "");
  auto gpus2 = replay->discover();
  ASSERT_TRUE(gpus2) << gpus2.error().message;
  ASSERT_EQ(gpus2->size(), gpus->size());
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    EXPECT_EQ((*gpus2)[i].uuid, (*gpus)[i].uuid);
    EXPECT_EQ((*gpus2)[i].pci_bus_id, (*gpus)[i].pci_bus_id);
    EXPECT_EQ((*gpus2)[i].memory_mib, (*gpus)[i].memory_mib);
    EXPECT_EQ((*gpus2)[i].mig_current, (*gpus)[i].mig_current);
  }
  auto model2 = replay->read_catalog(1);
  ASSERT_TRUE(model2) << model2.error().message;
  EXPECT_EQ(compare_models(*model, *model2), std::vector<std::string>{});
  // Compute-instance profiles are derived on replay, so instances can still be made.
  EXPECT_TRUE(replay->create_instance(1, 9, {0, 4}));
}

// The recording the probe made on a real H100 (MIG disabled) replays through the fake, and the
// hand-typed H100 fixture answers every profile query exactly as that device did.
TEST_F(ProbeTest, RealH100RecordingReplaysAndMatchesTheHandWrittenFixture) {
  auto real = replay_recording("h100/h100-80gb-hbm3-probe.json");
  ASSERT_EQ(real->unavailable_reason(), "");
  auto real_reads = real->read_profiles(0);
  auto real_model = real->read_catalog(0);
  ASSERT_TRUE(real_reads && real_model);
  auto diffs = compare_models(*Catalog::builtin().find_model("H100-80GB"), *real_model);
  EXPECT_TRUE(diffs.empty()) << diffs.front();
  real.reset();

  use_fixture("h100-80gb-1gpu.json");
  auto typed = nvml::Reader::open();
  auto typed_reads = typed->read_profiles(0);
  ASSERT_TRUE(typed_reads);
  ASSERT_EQ(typed_reads->size(), real_reads->size());
  for (std::size_t i = 0; i < real_reads->size(); ++i) {
    const auto& r = (*real_reads)[i];
    const auto& t = (*typed_reads)[i];
    SCOPED_TRACE("profile index " + std::to_string(r.index));
    ASSERT_EQ(r.info.has_value(), t.info.has_value());
    if (!r.info) {
      EXPECT_EQ(r.info_error->code, t.info_error->code);
      continue;
    }
    const auto &a = *r.info, &b = *t.info;
    EXPECT_STREQ(a.name, b.name);
    EXPECT_EQ(std::tie(a.id, a.isP2pSupported, a.sliceCount, a.instanceCount, a.multiprocessorCount, a.copyEngineCount,
                       a.decoderCount, a.encoderCount, a.jpegCount, a.ofaCount, a.memorySizeMB),
              std::tie(b.id, b.isP2pSupported, b.sliceCount, b.instanceCount, b.multiprocessorCount, b.copyEngineCount,
                       b.decoderCount, b.encoderCount, b.jpegCount, b.ofaCount, b.memorySizeMB));
    ASSERT_EQ(r.placements.size(), t.placements.size());
    for (std::size_t k = 0; k < r.placements.size(); ++k) {
      EXPECT_EQ(r.placements[k].start, t.placements[k].start);
      EXPECT_EQ(r.placements[k].size, t.placements[k].size);
    }
  }
}

// The recording the probe made on the lent H200 (MIG disabled, docs/hardware/h200) is the H200's
// fixture: the built-in H200-141GB table must answer exactly what that device answered.
TEST_F(ProbeTest, RealH200RecordingMatchesTheBuiltInTable) {
  auto real = replay_recording("h200/h200-141gb-probe.json");
  ASSERT_EQ(real->unavailable_reason(), "");
  auto gpus = real->discover();
  ASSERT_TRUE(gpus && gpus->size() == 1u);
  EXPECT_EQ(gpus->front().product_name, "NVIDIA H200");
  EXPECT_EQ(gpus->front().mig_current, MigMode::disabled);
  auto real_model = real->read_catalog(0);
  ASSERT_TRUE(real_model) << real_model.error().message;
  EXPECT_EQ(real_model->name, "H200-141GB");
  auto diffs = compare_models(*Catalog::builtin().find_model("H200-141GB"), *real_model);
  EXPECT_TRUE(diffs.empty()) << diffs.front();
}

TEST_F(ProbeTest, WithoutALibraryReportsWhyAndNoGpus) {
  auto j = run_probe("--library /nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(j["gpus"], json::array());
  EXPECT_NE(j["probe"]["unavailable"].get<std::string>().find("not loadable"), std::string::npos);
}

TEST_F(ProbeTest, CaptureFixtureAgreesWithTheNvidiaSmiCapture) {
  std::string xml = read_file(std::string(VGPU_DATA_DIR) + "/h100/h100-nvidia-smi-q.xml");
  ASSERT_FALSE(xml.empty());
  auto tag = [&](const std::string& name) {
    auto b = xml.find("<" + name + ">");
    auto e = xml.find("</" + name + ">", b);
    return b == std::string::npos ? std::string() : xml.substr(b + name.size() + 2, e - b - name.size() - 2);
  };
  json f = json::parse(read_file(fixture("h100-80gb-capture.json")));
  const json& g = f["gpus"][0];
  EXPECT_EQ(g["name"], tag("product_name"));
  EXPECT_EQ(g["uuid"], tag("uuid"));
  EXPECT_EQ(g["pci_bus_id"], tag("pci_bus_id"));
  EXPECT_EQ(std::to_string(g["memory_mib"].get<int>()) + " MiB", tag("total"));  // first <total> is fb memory
  EXPECT_EQ(g["mig_mode"]["current"], "disabled");
  EXPECT_EQ(tag("current_mig"), "Disabled");
  EXPECT_EQ(f["driver_version"], tag("driver_version"));
}

TEST_F(ProbeTest, FakeNvmlSmiShowsInstancesAndTheirMigUuids) {
  auto made = helper("create 0 14 2 2");
  ASSERT_EQ(made.status, 0) << made.out;
  std::string uuid = made.out.substr(made.out.find("MIG-"), 40);
  auto smi = run_command(VGPU_FAKE_NVML_SMI);
  EXPECT_EQ(smi.status, 0);
  EXPECT_NE(smi.out.find("MIG enabled"), std::string::npos) << smi.out;
  EXPECT_NE(smi.out.find("MIG 2g.20gb"), std::string::npos) << smi.out;
  EXPECT_NE(smi.out.find(uuid), std::string::npos) << smi.out;
}

}  // namespace
}  // namespace vgpu::test
