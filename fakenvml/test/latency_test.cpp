// VGPU_FAKE_NVML_LATENCY_MS: how long the fake's MIG calls take (latency.h).
#include "latency.h"

#include <gtest/gtest.h>

namespace fakenvml {
namespace {

TEST(FakeNvmlLatency, UnsetMeansAtOnce) {
  std::string error;
  auto l = parse_latency("", error);
  ASSERT_TRUE(l) << error;
  EXPECT_EQ(l->gi_create_ms + l->ci_create_ms + l->ci_destroy_ms + l->gi_destroy_ms, 0u);
}

TEST(FakeNvmlLatency, TheH100PresetCreatesInOneAndAHalfSeconds) {
  std::string error;
  auto l = parse_latency("h100", error);
  ASSERT_TRUE(l) << error;
  EXPECT_EQ(l->gi_create_ms + l->ci_create_ms, 1500u);  // DCGM issue #230: 1-2 s on an H100
  EXPECT_GT(l->gi_destroy_ms, 0u);
}

TEST(FakeNvmlLatency, StepsAreNamedAndAnySubsetMayBeGiven) {
  std::string error;
  auto l = parse_latency("gi_create=900,gi_destroy=50", error);
  ASSERT_TRUE(l) << error;
  EXPECT_EQ(l->gi_create_ms, 900u);
  EXPECT_EQ(l->ci_create_ms, 0u);
  EXPECT_EQ(l->gi_destroy_ms, 50u);
}

TEST(FakeNvmlLatency, BadItemsAreNamed) {
  for (const char* bad : {"gi_create", "gi_create=", "gi_create=-1", "gi_create=1s", "create=5", "gi_create=60001",
                          "gi_create=5,", "h200"}) {
    std::string error;
    EXPECT_FALSE(parse_latency(bad, error)) << bad;
    EXPECT_NE(error.find("VGPU_FAKE_NVML_LATENCY_MS: '"), std::string::npos) << bad << ": " << error;
  }
}

}  // namespace
}  // namespace fakenvml
