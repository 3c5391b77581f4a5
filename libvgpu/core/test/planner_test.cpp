#include "vgpu/core/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace vgpu {
namespace {

const GpuModel& h100() { return *Catalog::builtin().find_model("H100-80GB"); }

std::vector<PlannerGpu> empty_node(int n, const GpuModel& m = h100()) {
  std::vector<PlannerGpu> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back({GpuLayout(m), true});
  return gpus;
}

void run(std::vector<PlannerGpu>& gpus, int gpu, const char* profile, int start) {
  const Profile* p = gpus[static_cast<std::size_t>(gpu)].occupied.model().find_profile(profile);
  auto pl = std::ranges::find(p->placements, start, &Placement::start);
  ASSERT_TRUE(gpus[static_cast<std::size_t>(gpu)].occupied.place(*p, *pl));
}

TEST(Planner, ServesDemandOnAnEmptyNode) {
  auto gpus = empty_node(2);
  std::vector<Demand> demand = {{"7g.80gb", 1}, {"1g.10gb", 4}};
  Plan plan = plan_node(gpus, {}, demand);
  EXPECT_EQ(plan.counts(), (std::map<std::string, int>{{"1g.10gb", 4}, {"7g.80gb", 1}}));
  ASSERT_TRUE(verify_jointly_placeable(gpus, plan));
}

TEST(Planner, NeverPromisesMoreThanFits) {
  auto gpus = empty_node(1);
  std::vector<Demand> demand = {{"3g.40gb", 5}};
  Plan plan = plan_node(gpus, {}, demand);
  EXPECT_EQ(plan.counts().at("3g.40gb"), 2);
  EXPECT_EQ(plan.notes.front(), "demand #1 3g.40gb x5: 2 planned");
}

TEST(Planner, RunningInstancesAreNeverMovedOrOverlapped) {
  auto gpus = empty_node(1);
  run(gpus, 0, "3g.40gb", 4);
  std::vector<Demand> demand = {{"4g.40gb", 1}, {"3g.40gb", 2}};
  Plan plan = plan_node(gpus, {}, demand);
  ASSERT_EQ(plan.slots.size(), 1u);
  EXPECT_EQ(plan.slots[0].profile->name, "4g.40gb");
  EXPECT_EQ(plan.slots[0].placement, (Placement{0, 4}));
  EXPECT_EQ(gpus[0].occupied.instances().size(), 1u);
}

TEST(Planner, HigherPriorityDemandWinsContestedSpace) {
  auto gpus = empty_node(1);
  std::vector<Demand> demand = {{"4g.40gb", 1}, {"1g.10gb", 7}};
  Plan plan = plan_node(gpus, {}, demand);
  EXPECT_EQ(plan.counts().at("4g.40gb"), 1);
  EXPECT_EQ(plan.counts().at("1g.10gb"), 3);  // what is left after the 4g
}

TEST(Planner, PacksSmallInstancesOntoPartlyUsedGpus) {
  auto gpus = empty_node(2);
  run(gpus, 1, "3g.40gb", 0);
  std::vector<Demand> demand = {{"1g.10gb", 2}};
  Plan plan = plan_node(gpus, {}, demand);
  for (const auto& s : plan.slots) EXPECT_EQ(s.gpu, 1) << "GPU 0 should stay whole for a 7g";
}

TEST(Planner, AGpuWithMigOffServesOnlyItselfWholeAndIdlesAsItself) {
  auto gpus = empty_node(3);
  gpus[0].occupied.set_mode(GpuMode::whole);
  gpus[2].occupied.set_mode(GpuMode::whole);
  std::vector<Demand> demand = {{"whole.80gb", 1}, {"1g.10gb", 2}, {"7g.80gb", 2}};
  PlannerConfig config;
  config.idle_layout = {"1g.10gb"};
  Plan plan = plan_node(gpus, config, demand);
  ASSERT_TRUE(verify_jointly_placeable(gpus, plan));
  std::map<int, std::vector<std::string>> by_gpu;
  for (const auto& s : plan.slots) by_gpu[s.gpu].push_back(s.profile->name + " " + s.reason);
  EXPECT_EQ(by_gpu[0], (std::vector<std::string>{"whole.80gb demand #1"}));
  EXPECT_EQ(by_gpu[1], (std::vector<std::string>{"1g.10gb demand #2", "1g.10gb demand #2", "1g.10gb idle layout"}));
  // No 7g.80gb anywhere: GPU 1 holds the small ones, and neither MIG-off GPU can hold one. GPU 2's
  // idle layout is the whole GPU, not the partition's 1g.10gb.
  EXPECT_EQ(by_gpu[2], (std::vector<std::string>{"whole.80gb idle layout"}));
  EXPECT_EQ(plan.counts().count("7g.80gb"), 0u);
}

TEST(Planner, TheWholeGpuIsNeverPlannedWhileMigIsOn) {
  auto gpus = empty_node(1);
  std::vector<Demand> demand = {{"whole.80gb", 1}};
  PlannerConfig config;
  config.idle_layout = {"whole.80gb"};
  Plan plan = plan_node(gpus, config, demand);
  EXPECT_TRUE(plan.slots.empty());
  EXPECT_EQ(plan.notes.front(), "demand #1 whole.80gb x1: 0 planned");
}

TEST(Planner, DisallowedProfilesAreIgnoredWithANote) {
  auto gpus = empty_node(1);
  PlannerConfig cfg{{"1g.10gb"}, {}};
  std::vector<Demand> demand = {{"7g.80gb", 1}, {"1g.10gb", 1}};
  Plan plan = plan_node(gpus, cfg, demand);
  EXPECT_EQ(plan.counts(), (std::map<std::string, int>{{"1g.10gb", 1}}));
  EXPECT_EQ(plan.notes[0], "demand #1 7g.80gb: not allowed by the policy, ignored");
}

TEST(Planner, IdleLayoutFillsWhatDemandLeaves) {
  auto gpus = empty_node(2);
  gpus[1].eligible = false;
  PlannerConfig cfg{{}, {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}};
  Plan plan = plan_node(gpus, cfg, {});
  EXPECT_EQ(plan.counts(), (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  for (const auto& s : plan.slots) EXPECT_EQ(s.gpu, 0);
}

// Starvation guard: a 7g cannot fit anywhere while small jobs run. Once starving, the planner
// reserves the GPU with the fewest blockers and stops advertising new small instances there.
TEST(Planner, StarvingLargeDemandReservesAGpuToDrain) {
  auto gpus = empty_node(2);
  run(gpus, 0, "1g.10gb", 6);
  run(gpus, 1, "1g.10gb", 6);
  run(gpus, 1, "1g.10gb", 5);
  std::vector<Demand> demand = {{"1g.10gb", 3}, {"7g.80gb", 1, true}};
  PlannerConfig cfg{{}, {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}};
  Plan plan = plan_node(gpus, cfg, demand);
  ASSERT_EQ(plan.reserved_gpus, std::vector<int>{0});
  for (const auto& s : plan.slots) EXPECT_NE(s.gpu, 0) << "nothing new on the draining GPU";
  // Once the blocker finishes, the 7g is planned on that GPU first.
  auto drained = empty_node(2);
  run(drained, 1, "1g.10gb", 6);
  run(drained, 1, "1g.10gb", 5);
  Plan next = plan_node(drained, cfg, demand);
  ASSERT_FALSE(next.slots.empty());
  EXPECT_EQ(next.slots[0].profile->name, "7g.80gb");
  EXPECT_EQ(next.slots[0].gpu, 0);
  EXPECT_TRUE(next.reserved_gpus.empty());
}

// ---- properties over random nodes -------------------------------------------------------------

struct RandomNode {
  std::vector<PlannerGpu> gpus;
  std::vector<Demand> demand;
  PlannerConfig config;
};

RandomNode random_node() {
  const auto models = Catalog::builtin().models();
  RandomNode n;
  int count = *rc::gen::inRange(1, 9);
  for (int g = 0; g < count; ++g) {
    const GpuModel& m = models[static_cast<std::size_t>(*rc::gen::inRange<int>(0, static_cast<int>(models.size())))];
    GpuLayout layout(m);
    int tries = *rc::gen::inRange(0, 8);
    for (int t = 0; t < tries; ++t) {
      const Profile& p =
          m.profiles[static_cast<std::size_t>(*rc::gen::inRange<int>(0, static_cast<int>(m.profiles.size())))];
      auto free = layout.free_placements(p);
      if (!free.empty())
        (void)layout.place(p, free[static_cast<std::size_t>(*rc::gen::inRange<int>(0, static_cast<int>(free.size())))]);
    }
    n.gpus.push_back({layout, *rc::gen::inRange(0, 10) > 0});
  }
  std::vector<std::string> names;
  for (const auto& m : models)
    for (const auto& p : m.profiles) names.push_back(p.name);
  int nd = *rc::gen::inRange(0, 6);
  for (int d = 0; d < nd; ++d)
    n.demand.push_back({*rc::gen::elementOf(names), *rc::gen::inRange(1, 6), *rc::gen::inRange(0, 5) == 0});
  int ni = *rc::gen::inRange(0, 5);
  for (int i = 0; i < ni; ++i) n.config.idle_layout.push_back(*rc::gen::elementOf(names));
  return n;
}

// A round linear in the queue plans exactly what trying every unit of every demand plans: the
// same slots at the same places for the same demand, the same GPUs reserved. Counts here reach
// past what any node holds, and demand repeats profiles, as a real queue does.
RC_GTEST_PROP(PlannerProperty, RememberingFullProfilesPlansExactlyWhatTryingEveryUnitPlans, ()) {
  RandomNode n = random_node();
  std::vector<std::string> names;
  for (const auto& d : n.demand) names.push_back(d.profile);
  if (!names.empty())
    for (int extra = *rc::gen::inRange(0, 12); extra > 0; --extra)
      n.demand.push_back({*rc::gen::elementOf(names), *rc::gen::inRange(1, 80), *rc::gen::inRange(0, 4) == 0});
  Plan bounded = plan_node(n.gpus, n.config, n.demand);
  PlannerConfig every = n.config;
  every.try_every_unit = true;
  Plan reference = plan_node(n.gpus, every, n.demand);
  RC_ASSERT(bounded.slots.size() == reference.slots.size());
  for (std::size_t i = 0; i < bounded.slots.size(); ++i) {
    RC_ASSERT(bounded.slots[i] == reference.slots[i]);
    RC_ASSERT(bounded.slots[i].demand == reference.slots[i].demand);
  }
  RC_ASSERT(bounded.reserved_gpus == reference.reserved_gpus);
}

TEST(Planner, AHugeQueueOfOneProfileStopsTryingOnceItNoLongerFits) {
  auto gpus = empty_node(8);
  std::vector<Demand> demand(50'000, Demand{"2g.20gb", 4096, false});
  Plan plan = plan_node(gpus, {}, demand);
  EXPECT_EQ(plan.counts().at("2g.20gb"), 8 * 3);
  // A line for each of the first 100 demands, then one for the rest.
  ASSERT_EQ(plan.notes.size(), 101u);
  EXPECT_EQ(plan.notes[1], "demand #2 2g.20gb x4096: 0 planned");
  EXPECT_EQ(plan.notes.back(), "49900 more demand(s): 0 planned");
}

RC_GTEST_PROP(PlannerProperty, EveryPlanIsJointlyPlaceable, ()) {
  RandomNode n = random_node();
  Plan plan = plan_node(n.gpus, n.config, n.demand);
  auto ok = verify_jointly_placeable(n.gpus, plan);
  RC_ASSERT(ok.has_value());
}

RC_GTEST_PROP(PlannerProperty, RunningInstancesUntouchedAndIneligibleGpusUnused, ()) {
  RandomNode n = random_node();
  std::vector<std::vector<PlacedInstance>> before;
  for (const auto& g : n.gpus) before.push_back(g.occupied.instances());
  Plan plan = plan_node(n.gpus, n.config, n.demand);
  for (std::size_t g = 0; g < n.gpus.size(); ++g) RC_ASSERT(n.gpus[g].occupied.instances() == before[g]);
  for (const auto& s : plan.slots) RC_ASSERT(n.gpus[static_cast<std::size_t>(s.gpu)].eligible);
}

// Priority order: if demand #i is short, nothing planned for demand #i or earlier left room for it
// (later demand and the idle layout may only use space #i could not).
RC_GTEST_PROP(PlannerProperty, ShortDemandHadNoRoomLeftByHigherPriorities, ()) {
  RandomNode n = random_node();
  Plan plan = plan_node(n.gpus, n.config, n.demand);
  for (std::size_t i = 0; i < n.demand.size(); ++i) {
    if (n.demand[i].starving) continue;  // starving demand is served first by design
    int got = static_cast<int>(std::ranges::count(plan.slots, static_cast<int>(i), &PlannedSlot::demand));
    if (got >= n.demand[i].count) continue;
    std::vector<GpuLayout> layouts;
    for (const auto& g : n.gpus) layouts.push_back(g.occupied);
    for (const auto& s : plan.slots)
      if (s.demand >= 0 && (s.demand <= static_cast<int>(i) || n.demand[static_cast<std::size_t>(s.demand)].starving))
        (void)layouts[static_cast<std::size_t>(s.gpu)].place(*s.profile, s.placement);
    for (std::size_t g = 0; g < layouts.size(); ++g) {
      if (!n.gpus[g].eligible) continue;
      if (std::ranges::find(plan.reserved_gpus, static_cast<int>(g)) != plan.reserved_gpus.end()) continue;
      const Profile* p = layouts[g].model().find_profile(n.demand[i].profile);
      if (p) RC_ASSERT(!layouts[g].fits(*p));
    }
  }
}

RC_GTEST_PROP(PlannerProperty, DeterministicForTheSameInput, ()) {
  RandomNode n = random_node();
  Plan a = plan_node(n.gpus, n.config, n.demand);
  Plan b = plan_node(n.gpus, n.config, n.demand);
  RC_ASSERT(a.slots == b.slots);
}

}  // namespace
}  // namespace vgpu
