// The ledger on a uniform GPU (AMD compute partitions): the partitions of the GPU's mode that no
// job holds are free space, not leaks, and a partition's UUID round-trips.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "vgpu/ledger/ledger.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

std::string partition_uuid(int p) { return fmt::format("GPU-{:02x}3456789abcdef0", p); }

Ledger mi300x_ledger_with_job_on_partition(int partition) {
  Ledger l;
  l.node = "n3";
  l.gpus.push_back({0, "GPU-123456789abcdef0", "MI300X-192GB", "0000:0c:00.0"});
  LedgerInstance inst;
  inst.gpu = 0;
  inst.profile = "cpx.24gb";
  inst.placement = {partition, 1};
  inst.gpu_instance_id = partition;
  inst.mig_uuid = partition_uuid(partition);
  inst.job = 7;
  inst.user = "alice";
  inst.state = InstanceState::ready;
  l.instances.push_back(inst);
  return l;
}

HardwareView cpx_hardware() {
  HardwareView view;
  view.gpus.push_back({0, "GPU-123456789abcdef0", "AMD Instinct MI300X", "0000:0c:00.0"});
  for (int p = 0; p < 8; ++p) view.instances.push_back({0, "cpx.24gb", {p, 1}, p, 0, partition_uuid(p)});
  return view;
}

TEST(LedgerUniform, UnheldPartitionsOfTheModeAreNotLeaks) {
  auto diffs = reconcile(mi300x_ledger_with_job_on_partition(5), cpx_hardware());
  EXPECT_TRUE(diffs.empty()) << diffs.front().detail;
  EXPECT_TRUE(is_uniform_gpu(mi300x_ledger_with_job_on_partition(5), Catalog::builtin(), 0));
}

TEST(LedgerUniform, AHeldPartitionThatVanishedIsStillMissing) {
  auto view = cpx_hardware();
  view.instances.erase(view.instances.begin() + 5);
  auto diffs = reconcile(mi300x_ledger_with_job_on_partition(5), view);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::missing_instance);
}

TEST(LedgerUniform, PartitionUuidRoundTrips) {
  const auto l = mi300x_ledger_with_job_on_partition(2);
  auto back = parse_ledger(serialize_ledger(l));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->instances, l.instances);
}

}  // namespace
}  // namespace vgpu
