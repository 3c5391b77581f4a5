#include "vgpu/backend/whole_gpus.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

// A MIG backend that records what reaches it; GPU 0 runs with MIG on, GPU 1 with MIG off.
class RecordingBackend final : public GpuBackend {
 public:
  RecordingBackend() {
    gpus = {GpuInfo{0, "NVIDIA H100 80GB HBM3", "GPU-aaaa", "00000000:01:00.0", 81559, MigMode::enabled,
                    MigMode::enabled, 0},
            GpuInfo{1, "NVIDIA H100 80GB HBM3", "GPU-bbbb", "00000000:02:00.0", 81559, MigMode::disabled,
                    MigMode::disabled, 1}};
  }
  std::string_view backend_name() const override { return "recording"; }
  Result<std::vector<GpuInfo>> discover() override { return gpus; }
  std::string unavailable_reason() const override { return {}; }
  Result<GpuModel> read_catalog(int) override { return fail(ErrorCode::internal, "unused"); }
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override {
    ++lists;
    if (gpus.at(static_cast<std::size_t>(gpu)).mig_current != MigMode::enabled)
      return fail(ErrorCode::unavailable, "Not Supported");  // what NVML answers there
    return std::vector<InstanceInfo>{{gpu, 3, 0, 14, {0, 2}, "MIG-x", "2g.20gb"}};
  }
  Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) override {
    ++creates;
    return InstanceInfo{gpu, 5, 0, profile_id, placement, "MIG-y", "1g.10gb"};
  }
  Result<void> destroy_instance(int, int) override {
    ++destroys;
    return {};
  }
  std::vector<GpuInfo> gpus;
  int lists = 0, creates = 0, destroys = 0;
};

const Profile& whole_80gb() { return *Catalog::builtin().find_model("H100-80GB")->whole_gpu_profile(); }

TEST(WholeGpuInstance, IsTheGpuItselfOnEverySliceWhileMigIsOff) {
  RecordingBackend inner;
  auto whole = whole_gpu_instance(inner.gpus[1], Catalog::builtin());
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole,
            (InstanceInfo{1, 0, 0, kWholeGpuProfileId, whole_80gb().placements.front(), "GPU-bbbb", "whole.80gb"}));
}

TEST(WholeGpuInstance, NoneWhileMigIsOnOrTheModelHasNoWholeProfile) {
  RecordingBackend inner;
  EXPECT_FALSE(whole_gpu_instance(inner.gpus[0], Catalog::builtin()));
  GpuInfo unknown = inner.gpus[1];
  unknown.product_name = "Some Future GPU";
  EXPECT_FALSE(whole_gpu_instance(unknown, Catalog::builtin()));
}

TEST(WholeGpuBackend, ListsTheWholeGpuWhereMigIsOffAndMigInstancesWhereItIsOn) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  EXPECT_TRUE(backend.lists_whole_gpus());
  auto on = backend.list_instances(0);
  ASSERT_TRUE(on) << on.error().message;
  ASSERT_EQ(on->size(), 1U);
  EXPECT_EQ(on->front().mig_uuid, "MIG-x");
  auto off = backend.list_instances(1);
  ASSERT_TRUE(off) << off.error().message;
  ASSERT_EQ(off->size(), 1U);
  EXPECT_EQ(off->front().mig_uuid, "GPU-bbbb");
  EXPECT_EQ(inner.lists, 1) << "a GPU with MIG off is never asked for MIG instances";
}

TEST(WholeGpuBackend, SnapshotHoldsTheWholeGpuWithoutANote) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  auto snap = take_snapshot(backend);
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_EQ(snap->instances.size(), 2U);
  EXPECT_EQ(snap->instances[1].profile, "whole.80gb");
  EXPECT_TRUE(snap->notes.empty());
}

TEST(WholeGpuBackend, CreatingTheWholeProfileTouchesNoDriver) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  auto made = backend.create_instance(1, kWholeGpuProfileId, whole_80gb().placements.front());
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(made->mig_uuid, "GPU-bbbb");
  EXPECT_EQ(inner.creates, 0);
  ASSERT_TRUE(backend.destroy_instance(1, 0));
  EXPECT_EQ(inner.destroys, 0);
}

TEST(WholeGpuBackend, RefusesTheWholeProfileWhileMigIsOn) {
  RecordingBackend inner;
  inner.gpus[1].mig_pending = MigMode::enabled;
  inner.gpus[1].mig_current = MigMode::enabled;
  WholeGpuBackend backend(inner, Catalog::builtin());
  auto made = backend.create_instance(1, kWholeGpuProfileId, whole_80gb().placements.front());
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ErrorCode::unavailable);
  EXPECT_EQ(made.error().message,
            "gpu 1 (NVIDIA H100 80GB HBM3): the whole GPU needs MIG mode off, and it is enabled (pending enabled)");
}

TEST(WholeGpuBackend, RefusesAPlacementOtherThanEverySlice) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  auto made = backend.create_instance(1, kWholeGpuProfileId, Placement{0, 1});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ErrorCode::invalid_argument);
}

TEST(WholeGpuBackend, MigProfilesAndMigGpusGoToTheWrappedBackend) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  ASSERT_TRUE(backend.create_instance(0, 19, Placement{0, 1}));
  EXPECT_EQ(inner.creates, 1);
  ASSERT_TRUE(backend.destroy_instance(0, 5));
  EXPECT_EQ(inner.destroys, 1);
}

TEST(WholeGpuBackend, DestroyingAnyOtherInstanceOfAGpuWithMigOffIsNotFound) {
  RecordingBackend inner;
  WholeGpuBackend backend(inner, Catalog::builtin());
  auto gone = backend.destroy_instance(1, 3);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::not_found);
  EXPECT_EQ(inner.destroys, 0);
}

}  // namespace
}  // namespace vgpu
