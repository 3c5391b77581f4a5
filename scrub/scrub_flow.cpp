#include "scrub_flow.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "samples.h"

namespace vgpu::scrub {
namespace {

struct Chunk {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

// Owns the allocations so every exit path gives them back.
class Chunks {
 public:
  explicit Chunks(Device& d) : device_(d) {}
  Chunks(const Chunks&) = delete;
  Chunks& operator=(const Chunks&) = delete;
  ~Chunks() {
    for (const auto& c : list) device_.release(c.ptr);
  }
  std::vector<Chunk> list;

 private:
  Device& device_;
};

DeviceResult failure(Exit e, std::string message) { return DeviceError{e, std::move(message)}; }

// One warm-up, then `reps` timed runs of `work`, each moving `bytes`: GB/s per timed run.
DeviceResult repeat(Device& d, int reps, std::size_t bytes, const std::function<DeviceResult()>& work,
                    std::vector<double>& out) {
  double s = 0;
  if (auto f = d.timed(work, s)) return f;
  for (int i = 0; i < reps; ++i) {
    if (auto f = d.timed(work, s)) return f;
    out.push_back(gbps(bytes, s));
  }
  return std::nullopt;
}

DeviceResult allocate_everything(Device& d, const ChunkPolicy& policy, Chunks& chunks, ScrubReport& report) {
  ChunkPlanner planner(policy);
  for (;;) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (auto f = d.memory(free_bytes, total_bytes)) return f;
    report.total_bytes = total_bytes;
    const auto request = planner.next_request(free_bytes);
    if (!request) break;
    void* ptr = nullptr;
    bool refused = false;
    if (auto f = d.allocate(*request, ptr, refused)) return f;
    if (refused) {
      planner.failed(*request);
      continue;
    }
    chunks.list.push_back({ptr, *request});
    planner.succeeded(*request);
  }
  report.chunks = planner.chunks();
  report.alloc_failures = planner.failures();
  report.scrubbed_bytes = planner.allocated_bytes();
  if (chunks.list.empty())
    return failure(Exit::cuda_error, fmt::format("could not allocate even {} bytes", policy.min_chunk));
  // Largest first: calibration and the benchmark use the front chunk.
  std::ranges::stable_sort(chunks.list, std::ranges::greater{}, &Chunk::bytes);
  return std::nullopt;
}

DeviceResult calibrate(Device& d, const ScrubOptions& o, const Chunk& c, ScrubReport& report, Method& chosen) {
  const std::size_t bytes = std::min(c.bytes, o.calibration_bytes);
  std::vector<double> kernel, memset;
  if (auto f = repeat(
          d, o.calibration_reps, bytes, [&] { return d.zero(Method::kernel, c.ptr, bytes); }, kernel))
    return f;
  if (auto f = repeat(
          d, o.calibration_reps, bytes, [&] { return d.zero(Method::memset, c.ptr, bytes); }, memset))
    return f;
  report.calib_kernel_gbps = summarize(kernel).best_gbps;
  report.calib_memset_gbps = summarize(memset).best_gbps;
  if (o.method != Method::automatic) chosen = o.method;
  else
    chosen = report.calib_kernel_gbps >= report.calib_memset_gbps ? Method::kernel : Method::memset;
  return std::nullopt;
}

DeviceResult zero_everything(Device& d, Method m, const Chunks& chunks, ScrubReport& report) {
  return d.timed(
      [&]() -> DeviceResult {
        for (const auto& c : chunks.list)
          if (auto f = d.zero(m, c.ptr, c.bytes)) return f;
        return std::nullopt;
      },
      report.zero_seconds);
}

DeviceResult verify(Device& d, const ScrubOptions& o, const Chunks& chunks, ScrubReport& report) {
  std::vector<std::size_t> sizes;
  for (const auto& c : chunks.list) sizes.push_back(c.bytes);
  const auto samples = choose_samples(sizes, o.random_samples, report.seed);
  std::vector<std::uintptr_t> addresses;
  addresses.reserve(samples.size());
  for (const auto& s : samples)
    addresses.push_back(reinterpret_cast<std::uintptr_t>(chunks.list[s.chunk].ptr) + s.offset);
  // A read that never happened must not pass as "all zero".
  std::vector<std::uint64_t> values(samples.size(), ~std::uint64_t{0});
  if (auto f = d.read_words(addresses, values)) return f;
  report.verified_samples = samples.size();
  std::optional<std::size_t> first_bad;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    ++report.nonzero_samples;
    if (!first_bad) first_bad = i;
  }
  if (!first_bad) return std::nullopt;
  const auto& s = samples[*first_bad];
  return failure(Exit::verify_failed,
                 fmt::format("{} of {} sampled words not zero; first: chunk {} ({} bytes) offset {} = {:#018x}",
                             report.nonzero_samples, samples.size(), s.chunk, chunks.list[s.chunk].bytes, s.offset,
                             values[*first_bad]));
}

// On the largest chunk, after verification. memset writes 0 and the copy moves zeros onto zeros,
// so the memory is still scrubbed when it is released.
DeviceResult bench(Device& d, const ScrubOptions& o, const Chunk& c, BenchResult& b) {
  b.buffer_bytes = c.bytes;
  std::vector<double> memset, kernel, copy;
  if (auto f = repeat(
          d, o.bench_reps, c.bytes, [&] { return d.zero(Method::memset, c.ptr, c.bytes); }, memset))
    return f;
  if (auto f = repeat(
          d, o.bench_reps, c.bytes, [&] { return d.zero(Method::kernel, c.ptr, c.bytes); }, kernel))
    return f;
  const std::size_t half = c.bytes / 2 / 256 * 256;
  auto* base = static_cast<unsigned char*>(c.ptr);
  if (auto f = repeat(
          d, o.bench_reps, 2 * half, [&] { return d.copy(base + half, base, half); }, copy))
    return f;
  b.memset = summarize(memset);
  b.kernel = summarize(kernel);
  b.copy = summarize(copy);
  return std::nullopt;
}

DeviceResult scrub(Device& d, const ScrubOptions& o, Chunks& chunks, ScrubReport& report) {
  DeviceInfo info;
  if (auto f = d.open(info)) return f;
  report.device = info.name;
  report.uuid = info.uuid;
  if (auto f = allocate_everything(d, o.chunks, chunks, report)) return f;
  Method chosen = Method::kernel;
  if (auto f = calibrate(d, o, chunks.list.front(), report, chosen)) return f;
  report.method = chosen == Method::memset ? "memset" : "kernel";
  if (auto f = zero_everything(d, chosen, chunks, report)) return f;
  if (auto f = verify(d, o, chunks, report)) return f;
  if (o.bench) {
    BenchResult b;
    if (auto f = bench(d, o, chunks.list.front(), b)) return f;
    report.bench = b;
  }
  return d.finish();
}

}  // namespace

ScrubReport run_scrub(Device& device, const ScrubOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ScrubReport report;
  report.seed = options.seed ? *options.seed : std::random_device{}();
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) report.visible_devices = v;
  {
    Chunks chunks(device);
    if (auto f = scrub(device, options, chunks, report)) {
      report.exit = f->exit;
      report.error = f->message;
    }
  }  // released before the clock stops: giving the memory back is part of the scrub's cost
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace vgpu::scrub
