#include <gtest/gtest.h>

#include "vgpu/backend/backend.h"
#include "vgpu/backend/backend_catalog.h"

namespace vgpu {
namespace {

std::vector<DeviceProfile> a30_as_device_reports_it() {
  return {
      {0, 14, "MIG 1g.6gb", 1, 4, 14, 5952, {{3, 1}, {0, 1}, {1, 1}, {2, 1}}},
      {7, 21, "MIG 1g.6gb+me", 1, 1, 14, 5952, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
      {1, 5, "MIG 2g.12gb", 2, 2, 28, 12032, {{0, 2}, {2, 2}}},
      {8, 6, "MIG 2g.12gb+me", 2, 1, 28, 12032, {{0, 2}, {2, 2}}},
      {3, 0, "MIG 4g.24gb", 4, 1, 56, 24192, {{0, 4}}},
  };
}

TEST(ModelFromDevice, A30ReadMatchesBuiltinCatalogExactly) {
  auto m = model_from_device("NVIDIA A30", 24576, a30_as_device_reports_it());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->name, "A30-24GB");
  EXPECT_EQ(m->compute_slices, 4);
  EXPECT_EQ(m->memory_slices, 4);
  const GpuModel* builtin = Catalog::builtin().find_model("A30-24GB");
  ASSERT_NE(builtin, nullptr);
  EXPECT_EQ(compare_models(*builtin, *m), std::vector<std::string>{});
}

TEST(ModelFromDevice, DifferenceFromBuiltinIsReportedByField) {
  auto reports = a30_as_device_reports_it();
  reports[2].memory_mib = 12000;
  auto m = model_from_device("NVIDIA A30", 24576, reports);
  ASSERT_TRUE(m);
  EXPECT_EQ(compare_models(*Catalog::builtin().find_model("A30-24GB"), *m),
            std::vector<std::string>{"2g.12gb: memory_mib 12032 != 12000"});
}

TEST(ModelFromDevice, NoProfilesIsAnErrorNamingTheDevice) {
  auto m = model_from_device("NVIDIA H100 80GB HBM3", 81559, {});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "device NVIDIA H100 80GB HBM3: the device reported no MIG profiles");
}

TEST(ModelFromDevice, UnknownProductKeepsItsOwnName) {
  auto m = model_from_device("NVIDIA B200", 1000, {{0, 19, "MIG 1g.23gb", 1, 7, 18, 23000, {{0, 1}}}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "NVIDIA B200");
}

TEST(ModelFromDevice, BadProfileNameIsRejected) {
  auto m = model_from_device("NVIDIA A30", 24576, {{0, 14, "MIG one-slice", 1, 4, 14, 5952, {{0, 1}}}});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::invalid_argument);
}

TEST(ProfileNameFromDevice, DropsTheMigPrefixOnly) {
  EXPECT_EQ(profile_name_from_device("MIG 3g.40gb"), "3g.40gb");
  EXPECT_EQ(profile_name_from_device("1g.10gb+me"), "1g.10gb+me");
}

class FakeReader : public GpuReader {
 public:
  std::vector<GpuInfo> gpus;
  std::vector<InstanceInfo> instances;
  std::string_view backend_name() const override { return "fake"; }
  Result<std::vector<GpuInfo>> discover() override { return gpus; }
  std::string unavailable_reason() const override { return {}; }
  Result<GpuModel> read_catalog(int) override { return fail(ErrorCode::internal, "unused"); }
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override {
    if (gpu == 1) return fail(ErrorCode::internal, "boom");
    return instances;
  }
};

TEST(TakeSnapshot, SkipsGpusOutsideMigModeWithANote) {
  FakeReader r;
  r.gpus = {GpuInfo{}, GpuInfo{}};
  r.gpus[0].mig_current = MigMode::enabled;
  r.gpus[1].index = 1;
  r.gpus[1].mig_current = MigMode::disabled;
  r.instances = {InstanceInfo{0, 3, 0, 14, {0, 2}, "MIG-x", "2g.20gb"}};
  auto s = take_snapshot(r);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->instances, r.instances);
  EXPECT_EQ(s->notes, std::vector<std::string>{"gpu 1: MIG mode disabled, no instances"});
}

TEST(TakeSnapshot, ListingFailureNamesBackendAndGpu) {
  FakeReader r;
  r.gpus = {GpuInfo{}};
  r.gpus[0].index = 1;
  r.gpus[0].mig_current = MigMode::enabled;
  auto s = take_snapshot(r);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "fake: snapshot: gpu 1: boom");
}

}  // namespace
}  // namespace vgpu
