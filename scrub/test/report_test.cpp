#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "report.h"

namespace vgpu::scrub {
namespace {

ScrubReport h100_like() {
  ScrubReport r;
  r.device = "NVIDIA H100 80GB HBM3";
  r.uuid = "01234567-89ab-cdef-0123-456789abcdef";
  r.visible_devices = "0";
  r.total_bytes = 85'045'149'696;
  r.scrubbed_bytes = 84'448'919'552;
  r.chunks = 2;
  r.method = "kernel";
  r.calib_kernel_gbps = 2900.5;
  r.calib_memset_gbps = 2800.25;
  r.zero_seconds = 0.032;
  r.wall_seconds = 0.75;
  r.verified_samples = 65540;
  r.seed = 99;
  return r;
}

TEST(Report, OkLineCarriesBytesFractionTimeBandwidthAndSamples) {
  const auto j = nlohmann::json::parse(to_json_line(h100_like()));
  EXPECT_EQ(j["vgpu_scrub"], 1);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["ok"], true);
  EXPECT_FALSE(j.contains("error"));
  EXPECT_EQ(j["scrubbed_bytes"], 84'448'919'552u);
  EXPECT_DOUBLE_EQ(j["fraction"].get<double>(), 0.993);
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 0.032);
  EXPECT_DOUBLE_EQ(j["gbps"].get<double>(), 2639.029);  // 84.448919552 GB / 0.032 s
  EXPECT_EQ(j["verified_samples"], 65540);
  EXPECT_EQ(j["nonzero_samples"], 0);
  EXPECT_EQ(j["seed"], 99);
  EXPECT_EQ(j["cuda_visible_devices"], "0");
  EXPECT_FALSE(j.contains("bench"));
}

TEST(Report, SecondsKeepMicroseconds) {
  auto r = h100_like();
  r.zero_seconds = 0.0274561;
  r.wall_seconds = 1.2345678;
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 0.027456);
  EXPECT_DOUBLE_EQ(j["wall_seconds"].get<double>(), 1.234568);
}

TEST(Report, IsExactlyOneLine) {
  const auto line = to_json_line(h100_like());
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(Report, FailureNamesStatusAndErrorAndIsNotOk) {
  ScrubReport r;
  r.exit = Exit::no_device;
  r.error = "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)";
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_EQ(j["status"], "no_device");
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"], r.error);
  EXPECT_TRUE(j["fraction"].is_null()) << "no total known, so no fraction";
  EXPECT_TRUE(j["gbps"].is_null()) << "nothing timed, so no bandwidth";
}

TEST(Report, ExitCodesAreTheDocumentedOnes) {
  EXPECT_EQ(static_cast<int>(Exit::ok), 0);
  EXPECT_EQ(static_cast<int>(Exit::no_device), 2);
  EXPECT_EQ(static_cast<int>(Exit::verify_failed), 3);
  EXPECT_EQ(static_cast<int>(Exit::cuda_error), 4);
  EXPECT_EQ(status_name(Exit::verify_failed), "verify_failed");
}

TEST(Report, BenchComparesScrubAgainstMedianMemsetAndCopy) {
  auto r = h100_like();
  BenchResult b;
  b.buffer_bytes = 84'000'000'000;
  b.memset = {3000.0, 2800.0, 7};
  b.kernel = {2950.0, 2900.0, 7};
  b.copy = {2600.0, 2500.0, 7};
  r.bench = b;
  r.zero_seconds = static_cast<double>(r.scrubbed_bytes) / 2.52e12;  // scrub at 2520 GB/s
  const auto j = nlohmann::json::parse(to_json_line(r));
  EXPECT_DOUBLE_EQ(j["bench"]["scrub_vs_memset_pct"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(j["bench"]["scrub_vs_copy_pct"].get<double>(), 100.8);
  EXPECT_DOUBLE_EQ(j["bench"]["kernel_vs_memset_pct"].get<double>(), 103.571);
  EXPECT_EQ(j["bench"]["copy_counts"], "read+write");
  EXPECT_EQ(j["bench"]["memset"]["best_gbps"], 3000.0);
  EXPECT_EQ(j["bench"]["copy"]["reps"], 7);
}

TEST(Bandwidth, BestIsMaxMedianIsMiddle) {
  const std::vector<double> odd{5, 1, 3};
  const std::vector<double> even{4, 1, 3, 2};
  EXPECT_EQ(summarize(odd).best_gbps, 5);
  EXPECT_EQ(summarize(odd).median_gbps, 3);
  EXPECT_EQ(summarize(even).median_gbps, 2.5);
  EXPECT_EQ(summarize(even).reps, 4u);
  EXPECT_TRUE(std::isnan(summarize(std::vector<double>{}).median_gbps));
}

TEST(Bandwidth, GigabytesAreDecimal) {
  EXPECT_DOUBLE_EQ(gbps(3'000'000'000, 1.5), 2.0);
  EXPECT_TRUE(std::isnan(gbps(1, 0)));
}

}  // namespace
}  // namespace vgpu::scrub
