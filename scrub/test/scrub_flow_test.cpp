// The scrub procedure against a host-memory fake device: what reaches the epilog (exit status,
// bytes, verification) for a good device, a device that leaves data behind, no device, and a
// device that faults mid-scrub.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "scrub_flow.h"

namespace vgpu::scrub {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr unsigned char kOldTenant = 0xab;  // what the previous job left in memory

class FakeDevice final : public Device {
 public:
  std::size_t capacity = 64 * MiB;
  std::size_t largest = 24 * MiB;  // no single allocation above this succeeds
  bool no_device = false;
  bool leave_last_word = false;  // a zeroing bug: the last 8 bytes of every region stay
  int fail_zero_call = -1;       // 0-based zero() call that faults
  double kernel_gbps = 2000, memset_gbps = 1800, copy_gbps = 1500;  // copy: read+write bytes

  int allocations = 0;
  int zero_calls = 0;
  int released_dirty = 0;
  std::map<unsigned char*, std::unique_ptr<unsigned char[]>> live;
  std::map<unsigned char*, std::size_t> sizes;

  DeviceResult open(DeviceInfo& info) override {
    if (no_device) return DeviceError{Exit::no_device, "cudaGetDeviceCount: cudaErrorNoDevice (fake)"};
    info = {"Fake H100", "00000000-0000-0000-0000-000000000001"};
    return std::nullopt;
  }
  DeviceResult memory(std::size_t& free_bytes, std::size_t& total_bytes) override {
    std::size_t used = 0;
    for (const auto& [p, n] : sizes) used += n;
    free_bytes = capacity - used;
    total_bytes = capacity + MiB;  // the context's own share, never allocatable
    return std::nullopt;
  }
  DeviceResult allocate(std::size_t bytes, void*& ptr, bool& refused) override {
    std::size_t free_bytes = 0, total = 0;
    memory(free_bytes, total);
    refused = bytes > largest || bytes > free_bytes;
    if (refused) return std::nullopt;
    ++allocations;
    auto mem = std::make_unique<unsigned char[]>(bytes);
    std::memset(mem.get(), kOldTenant, bytes);
    ptr = mem.get();
    sizes[mem.get()] = bytes;
    live[mem.get()] = std::move(mem);
    return std::nullopt;
  }
  void release(void* ptr) override {
    auto* p = static_cast<unsigned char*>(ptr);
    const std::size_t n = sizes.at(p);
    if (std::any_of(p, p + n, [](unsigned char b) { return b != 0; })) ++released_dirty;
    live.erase(p);
    sizes.erase(p);
  }
  DeviceResult timed(const std::function<DeviceResult()>& enqueue, double& seconds) override {
    pending_ = 0;
    if (auto f = enqueue()) return f;
    seconds = pending_;
    return std::nullopt;
  }
  DeviceResult zero(Method m, void* ptr, std::size_t bytes) override {
    if (zero_calls++ == fail_zero_call)
      return DeviceError{Exit::cuda_error, "zero kernel launch: cudaErrorLaunchFailure (fake)"};
    EXPECT_TRUE(inside(ptr, bytes));
    std::memset(ptr, 0, leave_last_word && bytes >= 8 ? bytes - 8 : bytes);
    pending_ += static_cast<double>(bytes) / ((m == Method::memset ? memset_gbps : kernel_gbps) * 1e9);
    return std::nullopt;
  }
  DeviceResult copy(void* dst, const void* src, std::size_t bytes) override {
    EXPECT_TRUE(inside(dst, bytes) && inside(src, bytes));
    std::memmove(dst, src, bytes);
    pending_ += 2.0 * static_cast<double>(bytes) / (copy_gbps * 1e9);
    return std::nullopt;
  }
  DeviceResult read_words(std::span<const std::uintptr_t> addresses, std::span<std::uint64_t> out) override {
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      auto* p = reinterpret_cast<const void*>(addresses[i]);
      if (!inside(p, 8)) {
        ADD_FAILURE() << "sample outside every allocation: " << p;
        continue;
      }
      std::memcpy(&out[i], p, 8);
    }
    return std::nullopt;
  }
  DeviceResult finish() override { return std::nullopt; }

 private:
  double pending_ = 0;
  bool inside(const void* ptr, std::size_t bytes) const {
    const auto* p = static_cast<const unsigned char*>(ptr);
    return std::ranges::any_of(sizes,
                               [&](const auto& kv) { return p >= kv.first && p + bytes <= kv.first + kv.second; });
  }
};

ScrubOptions options() {
  ScrubOptions o;
  o.random_samples = 1000;
  o.seed = 5;
  return o;
}

TEST(ScrubFlow, ZeroesEveryAllocatedByteVerifiesAndReleasesAll) {
  FakeDevice d;
  const auto r = run_scrub(d, options());
  EXPECT_EQ(r.exit, Exit::ok) << r.error;
  EXPECT_EQ(r.device, "Fake H100");
  EXPECT_EQ(r.total_bytes, 65 * MiB);
  EXPECT_EQ(r.scrubbed_bytes, 64 * MiB);  // 64 and 32 MiB refused, then 16 MiB x 4
  EXPECT_EQ(r.chunks, 4u);
  EXPECT_EQ(r.alloc_failures, 2u);
  EXPECT_EQ(r.verified_samples, 1000u + 2 * 4);
  EXPECT_EQ(r.nonzero_samples, 0u);
  EXPECT_TRUE(d.live.empty()) << "allocations leaked";
  EXPECT_EQ(d.released_dirty, 0) << "memory released with old data in it";
  EXPECT_FALSE(r.bench.has_value());
}

TEST(ScrubFlow, DataLeftAtTheEndOfAChunkFailsVerificationWithExit3) {
  FakeDevice d;
  d.leave_last_word = true;
  const auto r = run_scrub(d, options());
  EXPECT_EQ(r.exit, Exit::verify_failed);
  EXPECT_GE(r.nonzero_samples, 4u);  // at least every chunk's last word
  EXPECT_NE(r.error.find("offset 16777208 = 0xabababababababab"), std::string::npos) << r.error;
  EXPECT_TRUE(d.live.empty());
}

TEST(ScrubFlow, NoDeviceIsExit2AndAllocatesNothing) {
  FakeDevice d;
  d.no_device = true;
  const auto r = run_scrub(d, options());
  EXPECT_EQ(r.exit, Exit::no_device);
  EXPECT_NE(r.error.find("cudaErrorNoDevice"), std::string::npos);
  EXPECT_EQ(d.allocations, 0);
  EXPECT_EQ(r.scrubbed_bytes, 0u);
}

TEST(ScrubFlow, FaultWhileZeroingIsExit4AndStillReleasesEverything) {
  FakeDevice d;
  d.fail_zero_call = 9;  // calibration makes calls 0-7 (2 methods x (warm-up + 3)); 9 = 2nd chunk of the pass
  const auto r = run_scrub(d, options());
  EXPECT_EQ(r.exit, Exit::cuda_error);
  EXPECT_NE(r.error.find("cudaErrorLaunchFailure"), std::string::npos) << r.error;
  EXPECT_EQ(d.allocations, 4);
  EXPECT_TRUE(d.live.empty());
}

TEST(ScrubFlow, AutomaticMethodPicksWhicheverCalibratedFaster) {
  FakeDevice slow_kernel;
  slow_kernel.kernel_gbps = 1000;
  slow_kernel.memset_gbps = 3000;
  const auto a = run_scrub(slow_kernel, options());
  EXPECT_EQ(a.method, "memset");
  EXPECT_DOUBLE_EQ(a.calib_memset_gbps, 3000);
  EXPECT_DOUBLE_EQ(a.calib_kernel_gbps, 1000);

  FakeDevice fast_kernel;
  fast_kernel.kernel_gbps = 3000;
  fast_kernel.memset_gbps = 2900;
  const auto b = run_scrub(fast_kernel, options());
  EXPECT_EQ(b.method, "kernel");
  EXPECT_NEAR(static_cast<double>(b.scrubbed_bytes) / b.zero_seconds / 1e9, 3000, 1e-6);

  auto forced = options();
  forced.method = Method::kernel;
  FakeDevice again;
  again.kernel_gbps = 1000;
  again.memset_gbps = 3000;
  EXPECT_EQ(run_scrub(again, forced).method, "kernel");
}

TEST(ScrubFlow, BenchTimesMemsetKernelAndCopyCountingCopyAsReadPlusWrite) {
  FakeDevice d;
  auto o = options();
  o.bench = true;
  o.bench_reps = 5;
  const auto r = run_scrub(d, o);
  ASSERT_EQ(r.exit, Exit::ok) << r.error;
  ASSERT_TRUE(r.bench.has_value());
  EXPECT_EQ(r.bench->buffer_bytes, 16 * MiB);
  EXPECT_NEAR(r.bench->memset.median_gbps, 1800, 1e-6);
  EXPECT_NEAR(r.bench->kernel.best_gbps, 2000, 1e-6);
  EXPECT_NEAR(r.bench->copy.median_gbps, 1500, 1e-6);
  EXPECT_EQ(r.bench->copy.reps, 5u);
  EXPECT_EQ(d.released_dirty, 0) << "the benchmark must leave memory zeroed";
}

}  // namespace
}  // namespace vgpu::scrub
