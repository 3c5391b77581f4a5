// The one JSON line vgpu-scrub prints, and the exit codes the epilog acts on. Versioned so the
// epilog can refuse a line it does not understand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace vgpu::scrub {

inline constexpr int kReportVersion = 1;

// Exit codes (docs/scrub.md). The epilog maps no_device to the partition's scrub policy.
enum class Exit : int {
  ok = 0,             // every allocatable byte zeroed and the samples read back as zero
  usage = 1,          // bad command line
  no_device = 2,      // no CUDA device or driver visible: nothing was scrubbed
  verify_failed = 3,  // a sampled word was not zero after the scrub
  cuda_error = 4,     // any other CUDA failure; the scrub is incomplete
};
std::string_view status_name(Exit e);

struct Bandwidth {
  double best_gbps = 0;
  double median_gbps = 0;
  std::size_t reps = 0;
};
// GB/s (1e9 bytes) for each timed repetition -> best and median.
Bandwidth summarize(std::span<const double> gbps);
double gbps(std::size_t bytes, double seconds);

struct BenchResult {
  std::size_t buffer_bytes = 0;  // memset/kernel over this many bytes; copy moves half of it
  Bandwidth memset;              // plain cudaMemset
  Bandwidth kernel;              // vgpu-scrub's vectorized zero kernel, same buffer
  Bandwidth copy;                // device-to-device cudaMemcpy, counted as read + write bytes
};

struct ScrubReport {
  Exit exit = Exit::ok;
  std::string error;            // empty unless exit != ok
  std::string device;           // cudaDeviceProp::name
  std::string uuid;             // cudaDeviceProp::uuid, 8-4-4-4-12 hex (a MIG instance has its own)
  std::string visible_devices;  // $CUDA_VISIBLE_DEVICES as the scrub saw it, for the epilog's log
  std::size_t total_bytes = 0;  // cudaMemGetInfo total
  std::size_t scrubbed_bytes = 0;
  std::size_t chunks = 0;
  std::size_t alloc_failures = 0;  // cudaMalloc refusals the back-off absorbed
  std::string method;              // "kernel" or "memset", whichever calibrated faster
  double calib_kernel_gbps = 0;
  double calib_memset_gbps = 0;
  double zero_seconds = 0;  // GPU time of the zeroing pass
  double wall_seconds = 0;  // whole run: init, allocate, zero, verify
  std::size_t verified_samples = 0;
  std::size_t nonzero_samples = 0;
  std::uint64_t seed = 0;
  std::optional<BenchResult> bench;
};

std::string to_json_line(const ScrubReport& r);

}  // namespace vgpu::scrub
