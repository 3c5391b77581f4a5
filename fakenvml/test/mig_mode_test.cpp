// The fake's MIG-mode switch (mig_mode.h): a Hopper GPU switches at once when nothing holds it, is
// refused with IN_USE while an instance or a process does, an Ampere GPU stays pending, and the
// mode the switch left is what every later query sees, also through a state file.
#include "mig_mode.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace fakenvml {
namespace {

Gpu gpu_named(const std::string& name, Mig mode) {
  Gpu g;
  g.name = name;
  g.uuid = "GPU-" + name;
  g.mig_current = g.mig_pending = mode;
  return g;
}

TEST(FakeMigMode, HopperSwitchesAtOnceWhenNothingHoldsIt) {
  State s;
  Gpu h100 = gpu_named("NVIDIA H100 80GB HBM3", Mig::disabled);
  EXPECT_FALSE(mig_enabled_now(s, h100));
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  EXPECT_EQ(set_mig_mode(s, h100, NVML_DEVICE_MIG_ENABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_TRUE(mig_enabled_now(s, h100));
  EXPECT_EQ(set_mig_mode(s, h100, NVML_DEVICE_MIG_DISABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_FALSE(mig_enabled_now(s, h100));
  EXPECT_EQ(mig_mode_now(s, h100).pending, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
}

TEST(FakeMigMode, AGpuInstanceKeepsMigOnAndTheDisablePending) {
  State s;
  Gpu h200 = gpu_named("NVIDIA H200", Mig::enabled);
  s.gpus[h200.uuid].push_back(GiState{});
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(set_mig_mode(s, h200, NVML_DEVICE_MIG_DISABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  EXPECT_TRUE(mig_enabled_now(s, h200));
  EXPECT_EQ(mig_mode_now(s, h200).pending, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  s.gpus[h200.uuid].clear();  // the instance destroyed: asking again activates it
  EXPECT_EQ(set_mig_mode(s, h200, NVML_DEVICE_MIG_DISABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_FALSE(mig_enabled_now(s, h200));
}

TEST(FakeMigMode, AProcessOnTheWholeGpuKeepsMigOff) {
  State s;
  Gpu h100 = gpu_named("NVIDIA H100 80GB HBM3", Mig::disabled);
  s.whole_gpus[h100.uuid].memory_used_mib = 512;
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(set_mig_mode(s, h100, NVML_DEVICE_MIG_ENABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  EXPECT_FALSE(mig_enabled_now(s, h100));
}

TEST(FakeMigMode, AmpereStaysPendingUntilAResetThatNeverComes) {
  State s;
  Gpu a100 = gpu_named("NVIDIA A100-SXM4-40GB", Mig::enabled);
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(set_mig_mode(s, a100, NVML_DEVICE_MIG_DISABLE, true, activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_RESET_REQUIRED);
  EXPECT_TRUE(mig_enabled_now(s, a100));
  EXPECT_EQ(mig_mode_now(s, a100).pending, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  EXPECT_TRUE(switch_needs_reset(gpu_named("NVIDIA A30", Mig::enabled)));
  EXPECT_FALSE(switch_needs_reset(gpu_named("NVIDIA H200", Mig::enabled)));
}

TEST(FakeMigMode, RefusesWithoutRootWithoutSupportAndABadMode) {
  State s;
  Gpu h100 = gpu_named("NVIDIA H100 80GB HBM3", Mig::disabled);
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(set_mig_mode(s, h100, NVML_DEVICE_MIG_ENABLE, false, activation), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(set_mig_mode(s, h100, 7, true, activation), NVML_ERROR_INVALID_ARGUMENT);
  Gpu l40s = gpu_named("NVIDIA L40S", Mig::unsupported);
  EXPECT_EQ(set_mig_mode(s, l40s, NVML_DEVICE_MIG_ENABLE, true, activation), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_FALSE(mig_enabled_now(s, h100));
  EXPECT_TRUE(s.mig_modes.empty()) << "a refused call changes nothing";
}

TEST(FakeMigMode, TheSwitchIsSharedThroughTheStateFile) {
  auto path = std::filesystem::temp_directory_path() / ("fakenvml-mig-" + std::to_string(::getpid()) + ".json");
  Gpu h100 = gpu_named("NVIDIA H100 80GB HBM3", Mig::disabled);
  {
    StateStore writer(path.string());
    ASSERT_EQ(writer.with(true,
                          [&](State& s) {
                            nvmlReturn_t activation = NVML_SUCCESS;
                            return set_mig_mode(s, h100, NVML_DEVICE_MIG_ENABLE, true, activation);
                          }),
              NVML_SUCCESS);
  }
  StateStore reader(path.string());
  bool on = false;
  ASSERT_EQ(reader.with(false,
                        [&](State& s) {
                          on = mig_enabled_now(s, h100);
                          return NVML_SUCCESS;
                        }),
            NVML_SUCCESS);
  EXPECT_TRUE(on);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fakenvml
