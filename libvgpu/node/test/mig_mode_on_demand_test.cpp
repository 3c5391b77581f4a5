// Which GPUs pending demand switches under mig_mode "on_demand": whole-GPU jobs take GPUs with MIG
// off first, then empty MIG GPUs, and drain a busy one only when starving; MIG jobs fill the MIG
// GPUs first and turn MIG on for a free whole GPU only when they do not fit.
#include "vgpu/node/mig_mode_on_demand.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

const GpuModel& h100() { return *Catalog::builtin().find_model("H100-80GB"); }

OnDemandGpu gpu(int index, bool mig_on, std::vector<std::string> held = {}, bool switchable = true) {
  OnDemandGpu g{index, GpuLayout(h100()), mig_on, switchable};
  for (const auto& name : held) {
    const Profile* p = h100().find_profile(name);
    g.held.take_mode_of(*p);
    EXPECT_TRUE(g.held.place(*p, *g.held.best_placement(*p)).has_value()) << name;
  }
  return g;
}

MigModeTargets choose(const std::vector<OnDemandGpu>& gpus, const std::vector<Demand>& demand,
                      const MigModeTargets& before = {}, bool whole_offered = true) {
  return choose_mig_modes_on_demand(gpus, demand, before, whole_offered);
}

TEST(MigModeOnDemand, NothingPendingSwitchesNothing) {
  auto t = choose({gpu(0, true), gpu(1, false)}, {});
  EXPECT_TRUE(t.whole.empty());
  EXPECT_TRUE(t.partitioned.empty());
}

TEST(MigModeOnDemand, AWholeGpuJobTakesAFreeGpuWithMigOffBeforeSwitchingOne) {
  auto t = choose({gpu(0, true), gpu(1, false)}, {{"whole.80gb", 1, false}});
  EXPECT_TRUE(t.whole.empty()) << "GPU 1 is already whole and free";
  t = choose({gpu(0, true), gpu(1, false, {"whole.80gb"})}, {{"whole.80gb", 1, false}});
  EXPECT_EQ(t.whole, (std::set<int>{0})) << "GPU 1's whole GPU is held: the empty MIG GPU 0 leaves MIG mode";
}

TEST(MigModeOnDemand, AWholeGpuJobDrainsABusyMigGpuOnlyWhenStarving) {
  const std::vector<OnDemandGpu> busy = {gpu(0, true, {"3g.40gb", "1g.10gb"}), gpu(1, true, {"1g.10gb"})};
  auto waiting = choose(busy, {{"whole.80gb", 1, false}});
  EXPECT_TRUE(waiting.whole.empty()) << "no empty GPU: a job not yet starving drains nothing";
  auto starving = choose(busy, {{"whole.80gb", 1, true}});
  EXPECT_EQ(starving.whole, (std::set<int>{1})) << "the GPU that holds the least drains";
  ASSERT_EQ(starving.notes.size(), 1u);
  EXPECT_EQ(starving.notes[0],
            "GPU 1: drains for starving whole.80gb demand (mig_mode on_demand): no new MIG job there, MIG off once "
            "its 1 held instance(s) are given back");
}

TEST(MigModeOnDemand, AGpuChosenLastRoundStaysChosen) {
  const std::vector<OnDemandGpu> gpus = {gpu(0, true), gpu(1, true), gpu(2, true)};
  MigModeTargets before;
  before.whole = {2};
  EXPECT_EQ(choose(gpus, {{"whole.80gb", 1, false}}, before).whole, (std::set<int>{2}));
  EXPECT_EQ(choose(gpus, {{"whole.80gb", 1, false}}).whole, (std::set<int>{0}));
}

TEST(MigModeOnDemand, MigJobsFillTheMigGpusBeforeTurningMigOnForAWholeOne) {
  const std::vector<OnDemandGpu> gpus = {gpu(0, true, {"3g.40gb"}), gpu(1, false)};
  auto fits = choose(gpus, {{"1g.10gb", 4, false}});
  EXPECT_TRUE(fits.partitioned.empty()) << "four 1g.10gb fit beside the 3g.40gb";
  auto overflows = choose(gpus, {{"1g.10gb", 5, false}});
  EXPECT_EQ(overflows.partitioned, (std::set<int>{1}));
  auto too_big = choose(gpus, {{"7g.80gb", 1, false}});
  EXPECT_EQ(too_big.partitioned, (std::set<int>{1})) << "a 7g.80gb needs an empty GPU: placement rules, not slice sums";
}

TEST(MigModeOnDemand, SlurmsOrderDecidesWhoGetsTheLastFreeGpu) {
  const std::vector<OnDemandGpu> gpus = {gpu(0, true, {"7g.80gb"}), gpu(1, false)};
  auto whole_first = choose(gpus, {{"whole.80gb", 1, false}, {"1g.10gb", 1, false}});
  EXPECT_TRUE(whole_first.partitioned.empty());
  EXPECT_TRUE(whole_first.whole.empty());
  auto mig_first = choose(gpus, {{"1g.10gb", 1, false}, {"whole.80gb", 1, false}});
  EXPECT_EQ(mig_first.partitioned, (std::set<int>{1}));
  EXPECT_TRUE(mig_first.whole.empty()) << "GPU 0 is held: the whole-GPU job waits";
}

TEST(MigModeOnDemand, OnlySwitchableGpusAreSwitchedButEveryGpuServes) {
  // GPU 0 is in a partition with a fixed mode (or an A100): it serves MIG demand but never moves.
  auto t = choose({gpu(0, true, {}, false), gpu(1, false)}, {{"1g.10gb", 3, false}});
  EXPECT_TRUE(t.partitioned.empty()) << "GPU 0 has room";
  t = choose({gpu(0, false, {}, false), gpu(1, true)}, {{"whole.80gb", 2, false}});
  EXPECT_EQ(t.whole, (std::set<int>{1})) << "GPU 0 serves one whole unit as it is, GPU 1 switches for the other";
  EXPECT_TRUE(choose({gpu(0, true, {}, false)}, {{"whole.80gb", 1, false}}).whole.empty());
}

// Four GPUs in two NVLink-bridged pairs, GPU 0 busy: a job for two whole GPUs takes the bridged
// pair 2-3 out of MIG mode, not GPUs 1 and 2, which only the host connects.
TEST(MigModeOnDemand, AJobForSeveralWholeGpusTakesThemFromOneNvlinkDomain) {
  const std::vector<OnDemandGpu> gpus = {gpu(0, true, {"1g.10gb"}), gpu(1, true), gpu(2, true), gpu(3, true)};
  const GpuLinks bridged{4, {{0, 1}, {2, 3}}, {}};
  EXPECT_EQ(choose(gpus, {{"whole.80gb", 2, false}}).whole, (std::set<int>{1, 2})) << "without links: by index";
  EXPECT_EQ(choose_mig_modes_on_demand(gpus, std::vector<Demand>{{"whole.80gb", 2, false}}, {}, true, bridged).whole,
            (std::set<int>{2, 3}));
  auto one_already_whole = gpus;
  one_already_whole[3].mig_on = false;
  EXPECT_EQ(
      choose_mig_modes_on_demand(one_already_whole, std::vector<Demand>{{"whole.80gb", 2, false}}, {}, true, bridged)
          .whole,
      (std::set<int>{2}))
      << "GPU 3 is whole already: only its bridge partner switches";
}

TEST(MigModeOnDemand, WithoutConfinableWholeGpusNothingLeavesMigForWholeDemand) {
  EXPECT_TRUE(choose({gpu(0, true)}, {{"whole.80gb", 1, true}}, {}, false).whole.empty());
}

TEST(MigModeOnDemand, ALargeCountCostsNoMoreThanTheGpus) {
  auto t = choose({gpu(0, true), gpu(1, true)}, {{"whole.80gb", 1000000, false}, {"1g.10gb", 1000000, false}});
  EXPECT_EQ(t.whole, (std::set<int>{0, 1}));
  EXPECT_TRUE(t.partitioned.empty());
}

}  // namespace
}  // namespace vgpu
