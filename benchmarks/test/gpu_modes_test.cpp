// The driver's rule the twin holds MIG mode on demand to: a GPU's mode changes only while it is
// empty, and only a real change counts as a switch.
#include "gpu_modes.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace vgpu::bench {
namespace {

TEST(GpuModes, EveryGpuStartsPartitioned) {
  const GpuModes modes(3);
  for (int g = 0; g < 3; ++g) EXPECT_EQ(modes.mode(g), GpuMode::partitioned);
  EXPECT_EQ(modes.switches(), 0);
}

TEST(GpuModes, AGpuThatHoldsWorkIsNeverSwitched) {
  GpuModes modes(2);
  EXPECT_THROW(modes.enter(0, GpuMode::whole, /*empty=*/false), std::logic_error);
  EXPECT_EQ(modes.mode(0), GpuMode::partitioned);
  EXPECT_EQ(modes.switches(), 0);
}

TEST(GpuModes, ASwitchHappensOnlyOnAnEmptyGpuAndOnlyWhenTheModeChanges) {
  GpuModes modes(2);
  EXPECT_FALSE(modes.enter(1, GpuMode::partitioned, /*empty=*/false)) << "already partitioned: no switch";
  EXPECT_TRUE(modes.enter(1, GpuMode::whole, /*empty=*/true));
  EXPECT_EQ(modes.mode(1), GpuMode::whole);
  EXPECT_EQ(modes.mode(0), GpuMode::partitioned) << "the other GPU keeps its mode";
  EXPECT_TRUE(modes.enter(1, GpuMode::partitioned, /*empty=*/true));
  EXPECT_EQ(modes.switches(), 2);
}

}  // namespace
}  // namespace vgpu::bench
