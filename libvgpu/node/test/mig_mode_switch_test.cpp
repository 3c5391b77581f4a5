// Which GPUs a partition's "mig_mode" has the planner switch ("partitioned": MIG on, "whole": MIG
// off), and why the others stay as they are.
#include "vgpu/node/mig_mode_switch.h"

#include <gtest/gtest.h>

#include <set>

namespace vgpu {
namespace {

GpuInfo gpu(int index, std::string product, MigMode mode) {
  GpuInfo g;
  g.index = index;
  g.product_name = std::move(product);
  g.uuid = "GPU-" + std::to_string(index);
  g.mig_current = g.mig_pending = mode;
  g.minor = index;
  return g;
}

PartitionPolicy partition(MigModePolicy mode) {
  PartitionPolicy p;
  p.name = "p";
  p.mig_mode = mode;
  return p;
}

MigModeChoice choose(const NodeSnapshot& snap, const PartitionPolicy& p, const Ledger& ledger = {}) {
  const PartitionPolicy* parts[] = {&p};
  return choose_mig_mode_switches(snap, Catalog::builtin(), parts, ledger);
}

TEST(MigModeSwitch, OnlyAnIdleHopperGpuWithMigOffIsSwitchedWhenThePartitionAsks) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::disabled), gpu(1, "NVIDIA H200", MigMode::enabled),
               gpu(2, "NVIDIA H200", MigMode::disabled), gpu(3, "NVIDIA L40S", MigMode::unsupported)};
  auto asked = choose(snap, partition(MigModePolicy::partitioned));
  EXPECT_EQ(asked.turn_on, (std::vector<int>{0, 2}));
  EXPECT_TRUE(asked.notes.empty());
  EXPECT_TRUE(choose(snap, partition(MigModePolicy::as_found)).turn_on.empty()) << "as_found never switches";
}

TEST(MigModeSwitch, AnAmpereGpuIsNeverSwitchedAndTheNoteSaysWhy) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA A100-SXM4-80GB", MigMode::disabled), gpu(1, "NVIDIA A30", MigMode::disabled)};
  auto choice = choose(snap, partition(MigModePolicy::partitioned));
  EXPECT_TRUE(choice.turn_on.empty());
  EXPECT_EQ(choice.notes, (std::vector<std::string>{
                              "GPU 0 (A100-80GB): mig_mode partitioned, but A100-80GB takes a new MIG mode only at "
                              "a GPU reset: left with MIG off",
                              "GPU 1 (A30-24GB): mig_mode partitioned, but A30-24GB takes a new MIG mode only at a "
                              "GPU reset: left with MIG off"}));
}

TEST(MigModeSwitch, AGpuThePartitionDoesNotUseIsLeftAlone) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::disabled), gpu(1, "NVIDIA H100 80GB HBM3", MigMode::disabled)};
  auto only_gpu_1 = partition(MigModePolicy::partitioned);
  only_gpu_1.gpus = std::vector<int>{1};
  EXPECT_EQ(choose(snap, only_gpu_1).turn_on, (std::vector<int>{1}));
  auto other_model = partition(MigModePolicy::partitioned);
  other_model.profile_rule = PartitionPolicy::ProfileRule::per_model;
  other_model.profiles_by_model = {{"H200-141GB", {"1g.18gb"}}};
  EXPECT_TRUE(choose(snap, other_model).turn_on.empty());
}

TEST(MigModeSwitch, AGpuTheLedgerStillUsesWaitsUntilItIsEmpty) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::disabled)};
  Ledger ledger;
  PlanSlot slot;
  slot.gpu = 0;
  slot.profile = "whole.80gb";
  slot.placement = {0, 8};
  ledger.plan.slots.push_back(slot);
  auto choice = choose(snap, partition(MigModePolicy::partitioned), ledger);
  EXPECT_TRUE(choice.turn_on.empty());
  ASSERT_EQ(choice.notes.size(), 1u);
  EXPECT_EQ(choice.notes[0],
            "GPU 0 (H100-80GB): mig_mode partitioned, but the ledger still has an instance or a slot on it: "
            "switched once it is empty");
}

TEST(MigModeSwitch, AWholePolicyTurnsMigOffForAnIdleHopperGpuWithMigOn) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::enabled), gpu(1, "NVIDIA H200", MigMode::disabled),
               gpu(2, "NVIDIA A100-SXM4-80GB", MigMode::enabled)};
  auto choice = choose(snap, partition(MigModePolicy::whole));
  EXPECT_EQ(choice.turn_off, (std::vector<int>{0}));
  EXPECT_TRUE(choice.turn_on.empty());
  EXPECT_EQ(choice.wanted_whole, (std::set<int>{0, 1, 2}));
  EXPECT_TRUE(choice.wanted_partitioned.empty());
  EXPECT_EQ(choice.notes, std::vector<std::string>{"GPU 2 (A100-80GB): mig_mode whole, but A100-80GB takes a new "
                                                   "MIG mode only at a GPU reset: left with MIG on"});
}

TEST(MigModeSwitch, PartitionedWinsWherePartitionsDisagree) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::enabled), gpu(1, "NVIDIA H100 80GB HBM3", MigMode::disabled)};
  auto whole = partition(MigModePolicy::whole);
  auto partitioned = partition(MigModePolicy::partitioned);
  partitioned.name = "q";
  const PartitionPolicy* parts[] = {&whole, &partitioned};
  auto choice = choose_mig_mode_switches(snap, Catalog::builtin(), parts, {});
  EXPECT_TRUE(choice.turn_off.empty());
  EXPECT_EQ(choice.turn_on, (std::vector<int>{1}));
  EXPECT_EQ(choice.wanted_partitioned, (std::set<int>{0, 1}));
  EXPECT_TRUE(choice.wanted_whole.empty());
}

TEST(MigModeSwitch, AGpuLeavingMigModeWaitsForItsLastInstance) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::enabled)};
  Ledger ledger;
  LedgerInstance inst;
  inst.gpu = 0;
  inst.profile = "1g.10gb";
  ledger.instances.push_back(inst);
  auto choice = choose(snap, partition(MigModePolicy::whole), ledger);
  EXPECT_TRUE(choice.turn_off.empty());
  EXPECT_EQ(choice.notes, std::vector<std::string>{"GPU 0 (H100-80GB): mig_mode whole, but the ledger still has an "
                                                   "instance or a slot on it: switched once it is empty"});
}

TEST(MigModeSwitch, OnDemandSwitchesWhatPendingDemandAsksAndAFixedModeWins) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", MigMode::enabled), gpu(1, "NVIDIA H100 80GB HBM3", MigMode::disabled),
               gpu(2, "NVIDIA H100 80GB HBM3", MigMode::enabled)};
  MigModeTargets targets;
  targets.whole = {0};
  targets.partitioned = {1};
  auto on_demand = partition(MigModePolicy::on_demand);
  const PartitionPolicy* parts[] = {&on_demand};
  auto choice = choose_mig_mode_switches(snap, Catalog::builtin(), parts, {}, targets);
  EXPECT_EQ(choice.turn_off, (std::vector<int>{0}));
  EXPECT_EQ(choice.turn_on, (std::vector<int>{1}));
  EXPECT_EQ(choice.for_demand, (std::set<int>{0, 1}));
  EXPECT_TRUE(choose_mig_mode_switches(snap, Catalog::builtin(), parts, {}).turn_off.empty())
      << "without targets on_demand keeps every GPU as it is";

  auto fixed = partition(MigModePolicy::partitioned);
  fixed.name = "q";
  fixed.gpus = std::vector<int>{0, 1};
  const PartitionPolicy* both[] = {&on_demand, &fixed};
  auto fixed_wins = choose_mig_mode_switches(snap, Catalog::builtin(), both, {}, targets);
  EXPECT_TRUE(fixed_wins.turn_off.empty()) << "GPU 0 stays partitioned: partition q fixes it";
  EXPECT_EQ(fixed_wins.turn_on, (std::vector<int>{1}));
  EXPECT_TRUE(fixed_wins.for_demand.empty());
  std::vector<std::string> notes;
  EXPECT_EQ(gpus_on_demand(snap, Catalog::builtin(), both, notes), (std::set<int>{2}));
}

TEST(MigModeSwitch, OnDemandNeverSwitchesAModelThatNeedsAReset) {
  NodeSnapshot snap;
  snap.gpus = {gpu(0, "NVIDIA A100-SXM4-80GB", MigMode::enabled)};
  auto on_demand = partition(MigModePolicy::on_demand);
  const PartitionPolicy* parts[] = {&on_demand};
  std::vector<std::string> notes;
  EXPECT_TRUE(gpus_on_demand(snap, Catalog::builtin(), parts, notes).empty());
  EXPECT_EQ(notes, std::vector<std::string>{"GPU 0 (A100-80GB): mig_mode on_demand, but A100-80GB takes a new MIG "
                                            "mode only at a GPU reset: left with MIG on"});
  MigModeTargets targets;
  targets.whole = {0};
  EXPECT_TRUE(choose_mig_mode_switches(snap, Catalog::builtin(), parts, {}, targets).turn_off.empty());
}

}  // namespace
}  // namespace vgpu
