#include "static_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

std::vector<std::string> names(const std::vector<GpuRecipe>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(r.describe());
  std::ranges::sort(out);
  return out;
}

TEST(StaticPlan, EveryMaximalRecipeIsLegalAndFull) {
  auto recipes = maximal_recipes(h100());
  ASSERT_FALSE(recipes.empty());
  for (const auto& r : recipes) {
    GpuLayout g(h100());
    for (const auto& i : r.instances) {
      ASSERT_TRUE(g.place(*i.profile, i.placement)) << r.describe();
    }
    for (const auto& p : h100().profiles) {
      if (p.name.find('+') == std::string::npos) {
        EXPECT_FALSE(g.fits(p)) << r.describe();
      }
    }
  }
  auto n = names(recipes);
  for (const char* expected : {"7g.80gb", "4g.40gb+3g.40gb", "3g.40gb+3g.40gb", "4g.40gb+2g.20gb+1g.10gb",
                               "1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb"})
    EXPECT_NE(std::ranges::find(n, expected), n.end()) << expected;
  EXPECT_EQ(std::ranges::adjacent_find(n), n.end()) << "one recipe per multiset";
}

TEST(StaticPlan, ServedWorkUsesExactSizesThenUpsizes) {
  std::vector<double> supply(h100().profiles.size(), 0.0);
  std::vector<ProfileDemand> demand(h100().profiles.size());
  auto idx = [](const char* name) {
    return static_cast<std::size_t>(h100().find_profile(name) - h100().profiles.data());
  };
  supply[idx("4g.40gb")] = 2;
  supply[idx("7g.80gb")] = 1;
  demand[idx("4g.40gb")] = {3, 500};  // two exact, one upsized into the 7g
  demand[idx("7g.80gb")] = {0, 1000};
  EXPECT_DOUBLE_EQ(served_milli(h100(), supply, demand), 1500);
  demand[idx("7g.80gb")] = {1, 1000};  // the 7g goes to its own size first
  EXPECT_DOUBLE_EQ(served_milli(h100(), supply, demand), 2000);
}

TEST(StaticPlan, SearchFollowsTheDemandMix) {
  std::vector<ProfileDemand> demand(h100().profiles.size());
  auto idx = [](const char* name) {
    return static_cast<std::size_t>(h100().find_profile(name) - h100().profiles.data());
  };
  demand[idx("4g.40gb")] = {60, 500};
  demand[idx("3g.40gb")] = {60, 400};
  demand[idx("7g.80gb")] = {40, 1000};
  StaticPlan plan = choose_static_plan(h100(), 100, demand);
  EXPECT_EQ(plan.describe(), "40x 7g.80gb, 60x 4g.40gb+3g.40gb");
  EXPECT_DOUBLE_EQ(plan.expected_served_milli, 60 * 500 + 60 * 400 + 40 * 1000);
}

}  // namespace
}  // namespace vgpu::bench
