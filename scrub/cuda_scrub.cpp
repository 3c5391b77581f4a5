#include "cuda_scrub.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "samples.h"
#include "zero_kernel.h"

namespace vgpu::scrub {
namespace {

constexpr std::size_t kCalibrationBytes = std::size_t{1} << 30;
constexpr int kCalibrationReps = 3;

struct Chunk {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

// Everything the run acquires, released in one place whatever path the run leaves by.
struct Resources {
  std::vector<Chunk> chunks;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  std::uint64_t* host_addresses = nullptr;
  std::uint64_t* host_values = nullptr;
  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources() {
    for (const auto& c : chunks) cudaFree(c.ptr);
    if (host_addresses != nullptr) cudaFreeHost(host_addresses);
    if (host_values != nullptr) cudaFreeHost(host_values);
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

// A CUDA call failed: carries which call and the runtime's own name for the error.
struct Failure {
  Exit exit;
  std::string message;
};

std::string describe(const char* what, cudaError_t e) {
  return fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

// No device or no usable driver: the epilog applies the partition's policy instead of treating it
// as a hardware fault.
bool means_no_device(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary;
}

std::optional<Failure> check(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return std::nullopt;
  return Failure{means_no_device(e) ? Exit::no_device : Exit::cuda_error, describe(what, e)};
}

#define VGPU_TRY(what, call)                                 \
  do {                                                       \
    if (auto failure_ = check(what, (call))) return failure_; \
  } while (0)

std::string format_uuid(const cudaUUID_t& u) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    hex += fmt::format("{:02x}", static_cast<unsigned char>(u.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) hex += '-';
  }
  return hex;
}

cudaError_t zero_with(Method m, void* ptr, std::size_t bytes, cudaStream_t s) {
  return m == Method::memset ? cudaMemsetAsync(ptr, 0, bytes, s) : launch_zero(ptr, bytes, s);
}

// Seconds of GPU time that `work` takes on the stream, measured with events around it.
template <class Work>
std::optional<Failure> timed(Resources& r, Work&& work, double& seconds) {
  VGPU_TRY("cudaEventRecord", cudaEventRecord(r.start, r.stream));
  VGPU_TRY("enqueue", work());
  VGPU_TRY("cudaEventRecord", cudaEventRecord(r.stop, r.stream));
  VGPU_TRY("cudaEventSynchronize", cudaEventSynchronize(r.stop));
  float ms = 0;
  VGPU_TRY("cudaEventElapsedTime", cudaEventElapsedTime(&ms, r.start, r.stop));
  seconds = static_cast<double>(ms) / 1e3;
  return std::nullopt;
}

// One warm-up, then `reps` timed runs of `work`, each moving `bytes`; GB/s per run.
template <class Work>
std::optional<Failure> repeat(Resources& r, int reps, std::size_t bytes, Work&& work, std::vector<double>& out) {
  double s = 0;
  if (auto f = timed(r, work, s)) return f;
  for (int i = 0; i < reps; ++i) {
    if (auto f = timed(r, work, s)) return f;
    out.push_back(gbps(bytes, s));
  }
  return std::nullopt;
}

std::optional<Failure> open_device(Resources& r, ScrubReport& report) {
  int count = 0;
  VGPU_TRY("cudaGetDeviceCount", cudaGetDeviceCount(&count));
  if (count == 0) return Failure{Exit::no_device, "cudaGetDeviceCount: 0 devices visible"};
  VGPU_TRY("cudaSetDevice(0)", cudaSetDevice(0));
  VGPU_TRY("cudaSetDeviceFlags", cudaSetDeviceFlags(cudaDeviceMapHost));
  VGPU_TRY("cudaFree(0) (context creation)", cudaFree(nullptr));
  cudaDeviceProp prop{};
  VGPU_TRY("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, 0));
  report.device = prop.name;
  report.uuid = format_uuid(prop.uuid);
  VGPU_TRY("cudaStreamCreate", cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  VGPU_TRY("cudaEventCreate", cudaEventCreate(&r.start));
  VGPU_TRY("cudaEventCreate", cudaEventCreate(&r.stop));
  return std::nullopt;
}

std::optional<Failure> allocate_everything(Resources& r, const ChunkPolicy& policy, ScrubReport& report) {
  ChunkPlanner planner(policy);
  for (;;) {
    std::size_t free_bytes = 0, total_bytes = 0;
    VGPU_TRY("cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total_bytes));
    report.total_bytes = total_bytes;
    const auto request = planner.next_request(free_bytes);
    if (!request) break;
    void* ptr = nullptr;
    const cudaError_t e = cudaMalloc(&ptr, *request);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky, but clear it so later checks see only new errors
      planner.failed(*request);
      continue;
    }
    VGPU_TRY("cudaMalloc", e);
    r.chunks.push_back({ptr, *request});
    planner.succeeded(*request);
  }
  report.chunks = planner.chunks();
  report.alloc_failures = planner.failures();
  report.scrubbed_bytes = planner.allocated_bytes();
  if (r.chunks.empty())
    return Failure{Exit::cuda_error, fmt::format("cudaMalloc: could not allocate even {} bytes", policy.min_chunk)};
  // Largest first: calibration and the benchmark use chunks[0].
  std::ranges::sort(r.chunks, std::ranges::greater{}, &Chunk::bytes);
  return std::nullopt;
}

std::optional<Failure> calibrate(Resources& r, ScrubOptions const& o, ScrubReport& report, Method& chosen) {
  const Chunk& c = r.chunks.front();
  const std::size_t bytes = std::min(c.bytes, kCalibrationBytes);
  std::vector<double> kernel, memset;
  if (auto f = repeat(r, kCalibrationReps, bytes, [&] { return zero_with(Method::kernel, c.ptr, bytes, r.stream); }, kernel))
    return f;
  if (auto f = repeat(r, kCalibrationReps, bytes, [&] { return zero_with(Method::memset, c.ptr, bytes, r.stream); }, memset))
    return f;
  report.calib_kernel_gbps = summarize(kernel).best_gbps;
  report.calib_memset_gbps = summarize(memset).best_gbps;
  chosen = o.method != Method::automatic ? o.method
           : report.calib_kernel_gbps >= report.calib_memset_gbps ? Method::kernel
                                                                  : Method::memset;
  return std::nullopt;
}

std::optional<Failure> zero_everything(Resources& r, Method m, ScrubReport& report) {
  return timed(
      r,
      [&]() -> cudaError_t {
        for (const auto& c : r.chunks)
          if (const cudaError_t e = zero_with(m, c.ptr, c.bytes, r.stream); e != cudaSuccess) return e;
        return cudaSuccess;
      },
      report.zero_seconds);
}

std::optional<Failure> verify(Resources& r, const ScrubOptions& o, ScrubReport& report) {
  std::vector<std::size_t> sizes;
  for (const auto& c : r.chunks) sizes.push_back(c.bytes);
  const auto samples = choose_samples(sizes, o.random_samples, report.seed);
  const std::size_t n = samples.size();
  void* host = nullptr;
  VGPU_TRY("cudaHostAlloc", cudaHostAlloc(&host, n * sizeof(std::uint64_t), cudaHostAllocMapped));
  r.host_addresses = static_cast<std::uint64_t*>(host);
  VGPU_TRY("cudaHostAlloc", cudaHostAlloc(&host, n * sizeof(std::uint64_t), cudaHostAllocMapped));
  r.host_values = static_cast<std::uint64_t*>(host);
  std::span<std::uint64_t> addresses(r.host_addresses, n), values(r.host_values, n);
  for (std::size_t i = 0; i < n; ++i) {
    addresses[i] = reinterpret_cast<std::uintptr_t>(r.chunks[samples[i].chunk].ptr) + samples[i].offset;
    values[i] = ~std::uint64_t{0};  // a gather that never ran must not pass as "all zero"
  }
  void* dev_addresses = nullptr;
  void* dev_values = nullptr;
  VGPU_TRY("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dev_addresses, r.host_addresses, 0));
  VGPU_TRY("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dev_values, r.host_values, 0));
  VGPU_TRY("gather kernel", launch_gather(static_cast<const std::uint64_t*>(dev_addresses),
                                          static_cast<std::uint64_t*>(dev_values), n, r.stream));
  VGPU_TRY("cudaStreamSynchronize", cudaStreamSynchronize(r.stream));
  report.verified_samples = n;
  std::optional<std::size_t> first_bad;
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] == 0) continue;
    ++report.nonzero_samples;
    if (!first_bad) first_bad = i;
  }
  if (first_bad) {
    const auto& s = samples[*first_bad];
    return Failure{Exit::verify_failed,
                   fmt::format("{} of {} sampled words not zero; first: chunk {} offset {} = {:#018x}",
                               report.nonzero_samples, n, s.chunk, s.offset, values[*first_bad])};
  }
  return std::nullopt;
}

// Runs on the largest chunk after verification. memset writes 0 and the copy moves zeros onto
// zeros, so the memory is still scrubbed when the run frees it.
std::optional<Failure> bench(Resources& r, const ScrubOptions& o, BenchResult& b) {
  const Chunk& c = r.chunks.front();
  b.buffer_bytes = c.bytes;
  std::vector<double> memset, kernel, copy;
  if (auto f = repeat(r, o.bench_reps, c.bytes, [&] { return cudaMemsetAsync(c.ptr, 0, c.bytes, r.stream); }, memset))
    return f;
  if (auto f = repeat(r, o.bench_reps, c.bytes, [&] { return launch_zero(c.ptr, c.bytes, r.stream); }, kernel))
    return f;
  const std::size_t half = c.bytes / 2 / 256 * 256;
  auto* base = static_cast<unsigned char*>(c.ptr);
  if (auto f = repeat(r, o.bench_reps, 2 * half,
                      [&] { return cudaMemcpyAsync(base + half, base, half, cudaMemcpyDeviceToDevice, r.stream); },
                      copy))
    return f;
  b.memset = summarize(memset);
  b.kernel = summarize(kernel);
  b.copy = summarize(copy);
  return std::nullopt;
}

std::optional<Failure> scrub(Resources& r, const ScrubOptions& o, ScrubReport& report) {
  if (auto f = open_device(r, report)) return f;
  if (auto f = allocate_everything(r, o.chunks, report)) return f;
  Method chosen = o.method;
  if (auto f = calibrate(r, o, report, chosen)) return f;
  report.method = chosen == Method::memset ? "memset" : "kernel";
  if (auto f = zero_everything(r, chosen, report)) return f;
  if (auto f = verify(r, o, report)) return f;
  if (o.bench) {
    BenchResult b;
    if (auto f = bench(r, o, b)) return f;
    report.bench = b;
  }
  // Surface any asynchronous fault before declaring success.
  VGPU_TRY("cudaDeviceSynchronize", cudaDeviceSynchronize());
  return std::nullopt;
}

}  // namespace

ScrubReport run_scrub(const ScrubOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ScrubReport report;
  report.seed = options.seed ? *options.seed : std::random_device{}();
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) report.visible_devices = v;
  {
    Resources r;
    if (auto f = scrub(r, options, report)) {
      report.exit = f->exit;
      report.error = f->message;
    }
  }  // frees every chunk before the wall clock stops: release is part of the scrub's cost
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace vgpu::scrub
