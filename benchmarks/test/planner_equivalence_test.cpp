// The "planner" policy must make the plugin's decision, not an imitation of it: on a single node
// every choice is compared with vgpu::plan_node() itself, and first-fit with GpuLayout's own
// first_fit_placement, over long random sequences of arrivals and departures.
#include <gtest/gtest.h>

#include <random>

#include "mig_packer.h"
#include "vgpu/core/planner.h"

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

MappedTask task_for(const Profile& p) {
  MappedTask t;
  t.kind = TaskKind::sharing;
  t.profile = &p;
  t.gpus = 1;
  return t;
}

struct Node {
  std::vector<GpuLayout> gpus;
  std::vector<Allocation> live;
};

std::vector<const Profile*> candidate_profiles() {
  std::vector<const Profile*> out;
  for (const auto& p : h100().profiles)
    if (p.name.find('+') == std::string::npos) out.push_back(&p);
  return out;
}

TEST(PlannerEquivalence, SingleNodeChoiceIsPlanNodeChoice) {
  MigPacker packer(h100(), ClusterShape{8, 8}, MigPacker::Mode::planner);
  Node node{std::vector<GpuLayout>(8, GpuLayout(h100())), {}};
  auto profiles = candidate_profiles();
  std::mt19937 rng(7);
  int compared = 0, placed = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!node.live.empty() && rng() % 3 == 0) {
      std::size_t k = rng() % node.live.size();
      const Allocation a = node.live[k];
      packer.release(a);
      ASSERT_TRUE(node.gpus[static_cast<std::size_t>(a.parts[0].gpu)].release(a.parts[0].where));
      node.live.erase(node.live.begin() + static_cast<long>(k));
      continue;
    }
    const Profile& p = *profiles[rng() % profiles.size()];
    std::vector<PlannerGpu> gpus;
    for (const auto& g : node.gpus) gpus.push_back({g, true});
    std::vector<Demand> demand{{p.name, 1, false}};
    Plan plan = plan_node(gpus, PlannerConfig{}, demand);
    auto got = packer.allocate(task_for(p));
    ++compared;
    if (plan.slots.empty()) {
      EXPECT_FALSE(got) << "step " << step << ": plan_node found no room for " << p.name;
      continue;
    }
    ASSERT_TRUE(got) << "step " << step << ": plan_node placed " << p.name;
    EXPECT_EQ(got->parts[0].gpu, plan.slots[0].gpu) << "step " << step << " " << p.name;
    EXPECT_EQ(got->parts[0].where, plan.slots[0].placement) << "step " << step << " " << p.name;
    ASSERT_TRUE(
        node.gpus[static_cast<std::size_t>(got->parts[0].gpu)].place(*got->parts[0].profile, got->parts[0].where));
    node.live.push_back(*got);
    ++placed;
  }
  EXPECT_GT(placed, 500);             // the sequence really exercised placements, not only refusals
  EXPECT_GT(compared - placed, 100);  // ...and refusals, which must match plan_node too
}

TEST(PlannerEquivalence, FirstFitIsLowestGpuThenGpuLayoutFirstFit) {
  MigPacker packer(h100(), ClusterShape{16, 8}, MigPacker::Mode::firstfit);
  std::vector<GpuLayout> gpus(16, GpuLayout(h100()));
  auto profiles = candidate_profiles();
  std::mt19937 rng(11);
  for (int step = 0; step < 400; ++step) {
    const Profile& p = *profiles[rng() % profiles.size()];
    std::optional<std::pair<int, Placement>> expected;
    for (int g = 0; g < 16 && !expected; ++g)
      if (auto w = gpus[static_cast<std::size_t>(g)].first_fit_placement(p)) expected = {{g, *w}};
    auto got = packer.allocate(task_for(p));
    ASSERT_EQ(got.has_value(), expected.has_value()) << "step " << step;
    if (!got) continue;
    EXPECT_EQ(got->parts[0].gpu, expected->first);
    EXPECT_EQ(got->parts[0].where, expected->second);
    ASSERT_TRUE(gpus[static_cast<std::size_t>(expected->first)].place(p, expected->second));
  }
}

TEST(PlannerEquivalence, PlannerPrefersTheFullerNodeOnEqualLoss) {
  MigPacker packer(h100(), ClusterShape{16, 8}, MigPacker::Mode::planner);
  const Profile& g7 = *h100().find_profile("7g.80gb");
  MappedTask whole = task_for(g7);
  whole.kind = TaskKind::whole_gpu;
  MappedTask eight = whole;
  eight.gpus = 1;
  auto first = packer.allocate(eight);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->parts[0].gpu, 0);  // both nodes empty: lowest GPU
  auto second = packer.allocate(eight);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->parts[0].gpu, 1);  // node 0 is now the fuller one
  MappedTask multi = whole;
  multi.gpus = 8;
  auto m = packer.allocate(multi);
  ASSERT_TRUE(m) << "node 1 is still empty";
  EXPECT_EQ(m->parts[0].gpu, 8);
  EXPECT_FALSE(packer.allocate(multi)) << "no node has eight empty GPUs left";
}

}  // namespace
}  // namespace vgpu::bench
