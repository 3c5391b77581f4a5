// Classes in the ledger: instances and slots may carry a class's name, which any reader resolves
// through the classes the ledger itself records, without the policy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "vgpu/ledger/ledger.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

Ledger h100_ledger_with_a_small_instance() {
  Ledger l;
  l.node = "n1";
  l.gpus.push_back({0, "GPU-1111", "H100-80GB", "0000:00:06.0"});
  l.classes = {GpuClass{"small", 10, 0.125, "", 0}};
  LedgerInstance inst;
  inst.gpu = 0;
  inst.profile = "small";
  inst.placement = {6, 1};
  inst.gpu_instance_id = 13;
  inst.mig_uuid = "MIG-aaaa";
  inst.job = 9;
  inst.user = "alice";
  inst.state = InstanceState::ready;
  l.instances.push_back(inst);
  l.plan.slots.push_back({0, "small", {5, 1}, std::nullopt});
  return l;
}

TEST(LedgerClasses, AClassNamedLedgerRoundTripsAsVersionFour) {
  const auto l = h100_ledger_with_a_small_instance();
  const auto text = serialize_ledger(l);
  EXPECT_NE(text.find("\"version\": 4"), std::string::npos);
  auto back = parse_ledger(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->classes, l.classes);
  EXPECT_EQ(back->instances, l.instances);
  // Without classes a ledger is still written as version 3, which the release before reads.
  Ledger plain = l;
  plain.classes.clear();
  plain.instances[0].profile = "1g.10gb";
  plain.plan.slots[0].profile = "1g.10gb";
  EXPECT_NE(serialize_ledger(plain).find("\"version\": 3"), std::string::npos);
}

TEST(LedgerClasses, AShareTypeNeedsVersionFiveAndKeepsItsInstanceAndShares) {
  auto l = h100_ledger_with_a_small_instance();
  l.classes.push_back(GpuClass{"quarter", 0, 0.0, "3g.40gb", 4});
  const auto text = serialize_ledger(l);
  EXPECT_NE(text.find("\"version\": 5"), std::string::npos);
  auto back = parse_ledger(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->classes, l.classes);
  // A version 4 ledger cannot carry one; a share type states both its instance and its shares.
  std::string v4 = text;
  v4.replace(v4.find("\"version\": 5"), 12, "\"version\": 4");
  auto old = parse_ledger(v4);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message.find("classes[1].shares: a version 4 ledger has no share types"), std::string::npos)
      << old.error().message;
  std::string half = text;
  half.erase(half.find("\"profile\": \"3g.40gb\","), 22);
  auto r = parse_ledger(half);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("classes[1]: a share type has both"), std::string::npos) << r.error().message;
}

TEST(LedgerClasses, AClassTheLedgerDoesNotDefineIsCorrupt) {
  auto l = h100_ledger_with_a_small_instance();
  l.classes = {GpuClass{"medium", 20, 0.25, "", 0}};
  auto r = validate(l);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("small: not a profile of H100-80GB"), std::string::npos) << r.error().message;
}

TEST(LedgerClasses, HardwareReportsTheRealizedProfileAndReconcileAgrees) {
  const auto l = h100_ledger_with_a_small_instance();
  HardwareView view;
  view.gpus.push_back({0, "GPU-1111", "NVIDIA H100 80GB HBM3", "0000:00:06.0"});
  view.instances.push_back({0, "1g.10gb", {6, 1}, 13, 0, "MIG-aaaa"});
  auto diffs = reconcile(l, view);
  EXPECT_TRUE(diffs.empty()) << diffs.front().detail;
  view.instances[0].profile = "1g.20gb";
  EXPECT_EQ(reconcile(l, view).size(), 1u);
}

TEST(LedgerClasses, SyncKeepsAClassThePolicyDroppedWhileSomethingStillNamesIt) {
  auto l = h100_ledger_with_a_small_instance();
  EXPECT_FALSE(sync_classes(l, {GpuClass{"small", 10, 0.125, "", 0}}));
  EXPECT_TRUE(sync_classes(l, {GpuClass{"large", 80, 0.0, "", 0}}));
  EXPECT_EQ(l.classes, (std::vector<GpuClass>{{"large", 80, 0.0, "", 0}, {"small", 10, 0.125, "", 0}}));
  l.instances.clear();
  l.plan.slots.clear();
  EXPECT_TRUE(sync_classes(l, {GpuClass{"large", 80, 0.0, "", 0}}));
  EXPECT_EQ(l.classes, (std::vector<GpuClass>{{"large", 80, 0.0, "", 0}}));
}

}  // namespace
}  // namespace vgpu
