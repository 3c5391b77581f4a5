// The ledger on a GPU served whole (MIG mode off, whole.<M>gb): the whole GPU exists with its
// mode, so one no job holds is free space rather than a leak; one a job holds validates and
// round-trips; and a GPU holds either itself or MIG instances, never both.
#include <gtest/gtest.h>

#include "vgpu/ledger/ledger.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

constexpr const char* kGpuUuid = "GPU-00000000-0000-0000-0000-000000000001";

LedgerInstance whole_instance_of_job(int job) {
  LedgerInstance inst;
  inst.gpu = 0;
  inst.profile = "whole.80gb";
  inst.placement = Catalog::builtin().find_model("H100-80GB")->whole_gpu_profile()->placements.front();
  inst.gpu_instance_id = 0;
  inst.mig_uuid = kGpuUuid;
  inst.job = job;
  inst.user = "alice";
  inst.state = InstanceState::ready;
  return inst;
}

Ledger h100_ledger() {
  Ledger l;
  l.node = "n1";
  l.gpus.push_back({0, kGpuUuid, "H100-80GB", "00000000:01:00.0"});
  return l;
}

HardwareView whole_gpu_hardware() {
  HardwareView view;
  view.gpus.push_back({0, kGpuUuid, "NVIDIA H100 80GB HBM3", "00000000:01:00.0"});
  const auto& inst = whole_instance_of_job(0);
  view.instances.push_back({0, inst.profile, inst.placement, 0, 0, kGpuUuid});
  return view;
}

TEST(LedgerWholeGpu, AnUnheldWholeGpuIsFreeSpaceNotALeak) {
  auto diffs = reconcile(h100_ledger(), whole_gpu_hardware());
  EXPECT_TRUE(diffs.empty()) << diffs.front().detail;
  EXPECT_TRUE(exists_with_gpu_mode(h100_ledger(), Catalog::builtin(), 0, "whole.80gb"));
  EXPECT_FALSE(exists_with_gpu_mode(h100_ledger(), Catalog::builtin(), 0, "1g.10gb"));
}

TEST(LedgerWholeGpu, AnUnknownMigInstanceIsStillALeak) {
  auto view = whole_gpu_hardware();
  view.instances = {{0, "1g.10gb", {0, 1}, 9, 0, "MIG-9"}};
  auto diffs = reconcile(h100_ledger(), view);
  ASSERT_EQ(diffs.size(), 1U);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::leaked_instance);
}

TEST(LedgerWholeGpu, AHeldWholeGpuValidatesAndRoundTrips) {
  auto l = h100_ledger();
  l.instances.push_back(whole_instance_of_job(7));
  EXPECT_TRUE(reconcile(l, whole_gpu_hardware()).empty());
  auto back = parse_ledger(serialize_ledger(l));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->instances, l.instances);
}

TEST(LedgerWholeGpu, AWholeGpuBesideAMigInstanceIsCorrupt) {
  auto l = h100_ledger();
  l.instances.push_back(whole_instance_of_job(7));
  LedgerInstance mig = whole_instance_of_job(8);
  mig.profile = "1g.10gb";
  mig.placement = {6, 1};
  mig.gpu_instance_id = 9;
  mig.mig_uuid = "MIG-9";
  l.instances.push_back(mig);
  auto ok = validate(l);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ErrorCode::corrupt);
}

}  // namespace
}  // namespace vgpu
