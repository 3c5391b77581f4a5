// Utilisation through the production NVML backend (nvml_gpm.h) against the fake's GPM: per MIG
// instance on a MIG H100, per GPU on the H100 captured with MIG off, memory only before Hopper.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "fake_env.h"
#include "nvml_backend.h"

namespace vgpu::test {
namespace {

constexpr int k1g10 = 19, k3g40 = 9;  // H100-80GB GPU-instance profile ids
constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;

using NvmlGpmTest = FakeNvml;

// What a job's workload does: the fake's load tool, run as its own process like a job would.
void load(const std::string& uuid, int sm, int dram, int memory_mib) {
  auto r = run_command(fmt::format("{} {} {} {} {} 2>&1", VGPU_FAKE_NVML_LOAD, uuid, sm, dram, memory_mib));
  ASSERT_EQ(r.status, 0) << r.out;
}

const ActivityReading* reading_for(const ActivitySample& s, const std::string& uuid) {
  for (const auto& r : s.readings)
    if (r.uuid == uuid) return &r;
  return nullptr;
}

TEST_F(NvmlGpmTest, EachMigInstanceReportsItsOwnUtilisationAndMemoryBetweenTwoSamples) {
  auto b = nvml::Backend::open();
  auto busy = b->create_instance(0, k3g40, {0, 4});
  auto idle = b->create_instance(0, k1g10, {6, 1});
  ASSERT_TRUE(busy && idle);
  load(busy->mig_uuid, 60, 25, 4096);
  auto sampler = b->activity_sampler();
  ASSERT_NE(sampler, nullptr);

  ActivitySample first = sampler->sample();
  EXPECT_EQ(first.errors, std::vector<std::string>{});
  ASSERT_EQ(first.readings.size(), 2u);
  const ActivityReading* r = reading_for(first, busy->mig_uuid);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->sm_utilization) << "GPM needs two samples; the first has nothing to compare with";
  EXPECT_EQ(r->memory_used_bytes, 4096 * kMiB);
  EXPECT_EQ(r->memory_total_bytes, 40448 * kMiB);  // the 3g.40gb profile's memory on H100-80GB

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ActivitySample second = sampler->sample();
  EXPECT_EQ(second.errors, std::vector<std::string>{});
  r = reading_for(second, busy->mig_uuid);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->sm_utilization && r->dram_bandwidth_utilization);
  EXPECT_NEAR(*r->sm_utilization, 0.60, 1e-9);
  EXPECT_NEAR(*r->dram_bandwidth_utilization, 0.25, 1e-9);
  EXPECT_EQ(r->gi_id, busy->gi_id);
  EXPECT_GT(r->interval_seconds, 0.04);
  const ActivityReading* q = reading_for(second, idle->mig_uuid);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->sm_utilization, 0.0);
  EXPECT_EQ(q->memory_used_bytes, 0u);
  EXPECT_EQ(second.gpus_without_support, 0);
}

TEST_F(NvmlGpmTest, AnInstanceDestroyedBetweenSamplesIsNoLongerReported) {
  auto b = nvml::Backend::open();
  auto a = b->create_instance(0, k1g10, {0, 1});
  auto c = b->create_instance(0, k1g10, {1, 1});
  ASSERT_TRUE(a && c);
  auto sampler = b->activity_sampler();
  EXPECT_EQ(sampler->sample().readings.size(), 2u);
  ASSERT_TRUE(b->destroy_instance(0, a->gi_id));
  ActivitySample after = sampler->sample();
  EXPECT_EQ(after.errors, std::vector<std::string>{});
  ASSERT_EQ(after.readings.size(), 1u);
  EXPECT_EQ(after.readings[0].uuid, c->mig_uuid);
  EXPECT_TRUE(after.readings[0].sm_utilization);
}

// Destroyed and created again at the same place between two rounds: same GI id, same (stable)
// UUID, but a new instance whose counters cannot be compared with the old one's.
TEST_F(NvmlGpmTest, AnInstanceCreatedAgainInPlaceStartsAFreshIntervalWithoutAnError) {
  auto b = nvml::Backend::open();
  auto first = b->create_instance(0, k1g10, {6, 1});
  ASSERT_TRUE(first);
  auto sampler = b->activity_sampler();
  (void)sampler->sample();
  ASSERT_TRUE(b->destroy_instance(0, first->gi_id));
  auto again = b->create_instance(0, k1g10, {6, 1});
  ASSERT_TRUE(again);
  ASSERT_EQ(again->mig_uuid, first->mig_uuid);
  load(again->mig_uuid, 30, 10, 0);
  ActivitySample s = sampler->sample();
  EXPECT_EQ(s.errors, std::vector<std::string>{});
  ASSERT_EQ(s.readings.size(), 1u);
  EXPECT_FALSE(s.readings[0].sm_utilization) << "no interval spans the two instances";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s = sampler->sample();
  ASSERT_TRUE(s.readings[0].sm_utilization);
  EXPECT_NEAR(*s.readings[0].sm_utilization, 0.30, 1e-9);
}

TEST_F(NvmlGpmTest, AGpuWithMigOffIsReportedWhole) {
  use_fixture("h100-80gb-capture.json");  // recorded on the lab's H100, MIG disabled
  auto b = nvml::Backend::open();
  auto gpus = b->discover();
  ASSERT_TRUE(gpus && gpus->size() == 1u);
  load((*gpus)[0].uuid, 90, 40, 10000);
  auto sampler = b->activity_sampler();
  (void)sampler->sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ActivitySample s = sampler->sample();
  EXPECT_EQ(s.errors, std::vector<std::string>{});
  ASSERT_EQ(s.readings.size(), 1u);
  const ActivityReading& r = s.readings[0];
  EXPECT_FALSE(r.gi_id);
  EXPECT_EQ(r.uuid, (*gpus)[0].uuid);
  ASSERT_TRUE(r.sm_utilization);
  EXPECT_NEAR(*r.sm_utilization, 0.90, 1e-9);
  EXPECT_EQ(r.memory_used_bytes, 10000 * kMiB);
}

TEST_F(NvmlGpmTest, GpusBeforeHopperGiveMemoryButNoUtilisation) {
  use_fixture("a100-40gb-1gpu.json");
  auto b = nvml::Backend::open();
  auto inst = b->create_instance(0, 19, {0, 1});  // 1g.5gb on A100-40GB has profile id 19
  ASSERT_TRUE(inst) << inst.error().message;
  auto sampler = b->activity_sampler();
  (void)sampler->sample();
  ActivitySample s = sampler->sample();
  EXPECT_EQ(s.errors, std::vector<std::string>{});
  EXPECT_EQ(s.gpus_without_support, 1);
  ASSERT_EQ(s.readings.size(), 1u);
  EXPECT_FALSE(s.readings[0].sm_utilization);
  EXPECT_TRUE(s.readings[0].memory_total_bytes);
}

TEST_F(NvmlGpmTest, TheFakeRefusesWhatTheDriverRefuses) {
  auto b = nvml::Backend::open();
  auto inst = b->create_instance(0, k1g10, {0, 1});
  ASSERT_TRUE(inst);
  // Beyond 100 %, more memory than the instance has, a GPU-wide load while MIG is on.
  auto r = run_command(fmt::format("{} {} 101 0 0 2>&1", VGPU_FAKE_NVML_LOAD, inst->mig_uuid));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("Invalid Argument"), std::string::npos) << r.out;
  r = run_command(fmt::format("{} {} 10 10 20000 2>&1", VGPU_FAKE_NVML_LOAD, inst->mig_uuid));
  EXPECT_NE(r.status, 0) << r.out;
  auto gpus = b->discover();
  r = run_command(fmt::format("{} {} 10 10 0 2>&1", VGPU_FAKE_NVML_LOAD, (*gpus)[0].uuid));
  EXPECT_NE(r.status, 0) << r.out;
  r = run_command(fmt::format("{} MIG-nope 10 10 0 2>&1", VGPU_FAKE_NVML_LOAD));
  EXPECT_NE(r.out.find("no GPU or MIG device"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vgpu::test
