#include "vgpu/core/gpu_layout.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

const GpuModel& h100() { return *Catalog::builtin().find_model("H100-80GB"); }
const Profile& prof(const GpuModel& m, std::string_view name) { return *m.find_profile(name); }

TEST(GpuLayout, UniformGpuTakesOnlyPartitionsOfItsCurrentMode) {
  const GpuModel& mi300x = *Catalog::builtin().find_model("MI300X-192GB");
  GpuLayout gpu(mi300x);
  ASSERT_TRUE(gpu.place(prof(mi300x, "cpx.24gb"), {7, 1}));
  ASSERT_TRUE(gpu.place(prof(mi300x, "cpx.24gb"), {3, 1}));
  auto mixed = gpu.place(prof(mi300x, "qpx.48gb"), {0, 2});
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().message.find("partitioned as cpx.24gb"), std::string::npos) << mixed.error().message;
  EXPECT_EQ(gpu.what_fits(), std::vector<const Profile*>{mi300x.find_profile("cpx.24gb")});
  // Once its partitions are released the GPU may take another mode.
  ASSERT_TRUE(gpu.release({7, 1}));
  ASSERT_TRUE(gpu.release({3, 1}));
  EXPECT_TRUE(gpu.place(prof(mi300x, "dpx.96gb"), {4, 4}));
}

TEST(GpuLayout, OverlappingPlacementIsRefusedWithReason) {
  GpuLayout gpu(h100());
  ASSERT_TRUE(gpu.place(prof(h100(), "3g.40gb"), {0, 4}));
  auto r = gpu.place(prof(h100(), "2g.20gb"), {2, 2});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_NE(r.error().message.find("overlap"), std::string::npos) << r.error().message;
}

TEST(GpuLayout, TwoThreeGInstancesLeaveNoRoomForAOneG) {
  GpuLayout gpu(h100());
  ASSERT_TRUE(gpu.place(prof(h100(), "3g.40gb"), {0, 4}));
  ASSERT_TRUE(gpu.place(prof(h100(), "3g.40gb"), {4, 4}));
  EXPECT_EQ(gpu.used_compute_slices(), 6);
  EXPECT_FALSE(gpu.fits(prof(h100(), "1g.10gb")));  // the famous stranded seventh compute slice
  EXPECT_TRUE(gpu.what_fits().empty());
}

TEST(GpuLayout, MediaExtensionProfileIsCappedAtOne) {
  GpuLayout gpu(h100());
  ASSERT_TRUE(gpu.place(prof(h100(), "1g.10gb+me"), {0, 1}));
  auto r = gpu.place(prof(h100(), "1g.10gb+me"), {1, 1});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("maximum"), std::string::npos);
}

TEST(GpuLayout, IllegalPlacementIsNamed) {
  GpuLayout gpu(h100());
  auto r = gpu.place(prof(h100(), "3g.40gb"), {2, 4});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a legal placement"), std::string::npos);
}

TEST(GpuLayout, ReleaseFreesTheSlicesForReuse) {
  GpuLayout gpu(h100());
  ASSERT_TRUE(gpu.place(prof(h100(), "7g.80gb"), {0, 8}));
  EXPECT_FALSE(gpu.fits(prof(h100(), "1g.10gb")));
  ASSERT_TRUE(gpu.release({0, 8}));
  EXPECT_TRUE(gpu.empty());
  EXPECT_EQ(gpu.free_placements(prof(h100(), "1g.10gb")).size(), 7u);
  EXPECT_FALSE(gpu.release({0, 8}));
}

// The scoring in action: first-fit puts a lone 1g at slice 0 and so blocks every large profile;
// best_placement() puts it at the end of the GPU, and a 4g.40gb still fits afterwards.
TEST(GpuLayout, BestPlacementBeatsFirstFitForALaterLargeProfile) {
  const auto& one_g = prof(h100(), "1g.10gb");
  const auto& four_g = prof(h100(), "4g.40gb");

  GpuLayout first_fit(h100());
  ASSERT_TRUE(first_fit.place(one_g, *first_fit.first_fit_placement(one_g)));
  EXPECT_FALSE(first_fit.fits(four_g));

  GpuLayout best(h100());
  auto where = best.best_placement(one_g);
  ASSERT_TRUE(where);
  EXPECT_EQ(where->start, 6);
  ASSERT_TRUE(best.place(one_g, *where));
  EXPECT_TRUE(best.fits(four_g));
  EXPECT_TRUE(best.fits(prof(h100(), "3g.40gb")));
  EXPECT_GT(best.options_score(), first_fit.options_score());
}

TEST(GpuLayout, DescribeDrawsSlicesInOrder) {
  GpuLayout gpu(h100());
  ASSERT_TRUE(gpu.place(prof(h100(), "1g.10gb"), {6, 1}));
  ASSERT_TRUE(gpu.place(prof(h100(), "2g.20gb"), {0, 2}));
  EXPECT_EQ(gpu.describe(), "[2g.20gb@0|....|1g.10gb@6|.]");
}

}  // namespace
}  // namespace vgpu
