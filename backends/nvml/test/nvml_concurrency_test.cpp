// Threads of one process driving the production NVML backend against the fake libnvidia-ml.so.1,
// each through its own Backend: the fake's process mutex and its flock-guarded state file must
// serialise them so no create or destroy is lost and no two instances overlap. (Separate
// processes racing are in nvml_backend_test.cpp; scripts/test-tsan.sh runs this under TSan.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_env.h"
#include "nvml_backend.h"
#include "vgpu/core/gpu_layout.h"

namespace vgpu::test {
namespace {

// NVML GPU-instance profile ids on H100-80GB (`nvidia-smi mig -lgip`).
constexpr int k1g10 = 19, k2g20 = 14, k3g40 = 9, k4g40 = 5;

using NvmlConcurrencyTest = FakeNvml;

TEST_F(NvmlConcurrencyTest, ThreadsFillingOneGpuWithDifferentProfilesNeverOverlap) {
  const std::vector<int> profiles = {k1g10, k2g20, k3g40, k4g40};
  const GpuModel& h100 = *Catalog::builtin().find_model("H100-80GB");
  for (int round = 0; round < 3; ++round) {
    std::filesystem::remove(state_);
    std::vector<int> created(profiles.size(), 0);
    std::atomic<int> broken{0};
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < profiles.size(); ++t)
      threads.emplace_back([&, t] {
        auto b = nvml::Backend::open();
        if (!b->unavailable_reason().empty()) {
          ++broken;
          return;
        }
        for (const auto& pl : h100.find_profile_by_nvml_id(profiles[t])->placements) {
          auto r = b->create_instance(0, profiles[t], pl);
          if (r) ++created[t];
          else if (r.error().code != ErrorCode::no_capacity)
            ++broken;  // only "taken" may fail
        }
      });
    for (auto& t : threads) t.join();
    ASSERT_EQ(broken.load(), 0);
    auto list = nvml::Backend::open()->list_instances(0);
    ASSERT_TRUE(list) << list.error().message;
    int total = 0;
    for (int n : created) total += n;
    EXPECT_EQ(static_cast<int>(list->size()), total) << "round " << round << ": a create was lost";
    GpuLayout layout(h100);
    std::set<std::string> uuids;
    for (const auto& i : *list) {
      const Profile* p = h100.find_profile_by_nvml_id(i.profile_id);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(layout.place(*p, i.placement))
          << "round " << round << ": overlap: " << layout.describe() << " + " << p->name;
      EXPECT_TRUE(uuids.insert(i.mig_uuid).second) << i.mig_uuid;
    }
    // Nothing is destroyed, so a slice free now was free when the 1g.10gb thread tried it.
    EXPECT_FALSE(layout.fits(*h100.find_profile_by_nvml_id(k1g10))) << layout.describe();
  }
}

TEST_F(NvmlConcurrencyTest, ThreadsCreatingAndDestroyingOnTheirOwnGpusLoseNoUpdate) {
  // All GPUs share one state file: a writer that re-wrote a stale copy would drop another
  // thread's instances or bring destroyed ones back, which each thread's own listing catches.
  use_fixture("h100-80gb-8gpu.json");
  constexpr int kThreads = 4, kRounds = 3, kPerGpu = 7;
  const GpuModel& h100 = *Catalog::builtin().find_model("H100-80GB");
  const auto& placements = h100.find_profile_by_nvml_id(k1g10)->placements;
  ASSERT_EQ(static_cast<int>(placements.size()), kPerGpu);
  std::vector<std::string> failures(kThreads);
  std::vector<std::set<std::string>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto b = nvml::Backend::open();
      auto fail_with = [&](const std::string& why) { failures[t] = fmt::format("gpu {}: {}", t, why); };
      for (int round = 0; round < kRounds; ++round) {
        std::vector<int> gis;
        for (const auto& pl : placements) {
          auto r = b->create_instance(t, k1g10, pl);
          if (!r) return fail_with(r.error().message);
          gis.push_back(r->gi_id);
          seen[t].insert(r->mig_uuid);
        }
        auto full = b->list_instances(t);
        if (!full || static_cast<int>(full->size()) != kPerGpu)
          return fail_with(fmt::format("round {}: {} instances listed after {} creates", round,
                                       full ? static_cast<int>(full->size()) : -1, kPerGpu));
        for (int gi : gis)
          if (auto r = b->destroy_instance(t, gi); !r) return fail_with(r.error().message);
        auto empty = b->list_instances(t);
        if (!empty || !empty->empty())
          return fail_with(fmt::format("round {}: {} instances left after destroying all", round,
                                       empty ? static_cast<int>(empty->size()) : -1));
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
  auto b = nvml::Backend::open();
  for (int gpu = 0; gpu < 8; ++gpu) {
    auto list = b->list_instances(gpu);
    ASSERT_TRUE(list) << list.error().message;
    EXPECT_TRUE(list->empty()) << "gpu " << gpu;
  }
  // MIG UUIDs are stable per placement (re-creating gives the same one) and unique across GPUs.
  std::set<std::string> all;
  for (const auto& s : seen) {
    EXPECT_EQ(static_cast<int>(s.size()), kPerGpu);
    all.insert(s.begin(), s.end());
  }
  EXPECT_EQ(static_cast<int>(all.size()), kThreads * kPerGpu);
}

}  // namespace
}  // namespace vgpu::test
