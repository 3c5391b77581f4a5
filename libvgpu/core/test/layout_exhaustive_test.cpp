// Every legal layout of every catalogued model, enumerated from the empty GPU by placing one more
// instance at a time. Each is checked against an independent slot-array oracle and round-tripped:
// rebuilt in reverse order, read back, and released to empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

#include "vgpu/core/gpu_layout.h"

namespace vgpu {
namespace {

using Key = std::vector<std::pair<std::string, int>>;  // sorted (profile, start) pairs

Key key_of(const GpuLayout& l) {
  Key k;
  for (const auto& i : l.instances()) k.emplace_back(i.profile->name, i.placement.start);
  std::ranges::sort(k);
  return k;
}

// Independent statement of the hardware rules over an array of memory slices. MIG mode: the whole
// GPU exists only with MIG off, a MIG instance only with MIG on (nvmlDeviceCreateGpuInstance*).
bool oracle_can_place(const GpuModel& m, GpuMode mode, const Key& layout, const Profile& p, Placement at) {
  if (p.whole_gpu != (mode == GpuMode::whole)) return false;
  if (std::ranges::find(p.placements, at) == p.placements.end()) return false;
  std::array<bool, 8> used{};
  int compute = 0, same = 0;
  for (const auto& [name, start] : layout) {
    const Profile* q = m.find_profile(name);
    for (const auto& pl : q->placements)
      if (pl.start == start)
        for (int s = pl.start; s < pl.end(); ++s) used[static_cast<std::size_t>(s)] = true;
    compute += q->compute_slices;
    if (name == p.name) ++same;
  }
  for (int s = at.start; s < at.end(); ++s)
    if (used[static_cast<std::size_t>(s)]) return false;
  return compute + p.compute_slices <= m.compute_slices && same < p.max_instances;
}

std::set<Key> enumerate(const GpuModel& m, GpuMode mode = GpuMode::partitioned) {
  std::set<Key> seen;
  std::vector<GpuLayout> stack{GpuLayout(m, mode)};
  seen.insert(Key{});  // the empty GPU; insert({}) would be the empty initializer list
  while (!stack.empty()) {
    GpuLayout cur = stack.back();
    stack.pop_back();
    for (const auto& p : m.profiles)
      for (const auto& pl : p.placements) {
        Key before = key_of(cur);
        bool engine = cur.can_place(p, pl);
        EXPECT_EQ(engine, oracle_can_place(m, mode, before, p, pl))
            << m.name << " " << cur.describe() << " + " << p.name << "@" << pl.start;
        if (!engine) continue;
        GpuLayout next = cur;
        EXPECT_TRUE(next.place(p, pl));
        if (seen.insert(key_of(next)).second) stack.push_back(next);
      }
  }
  return seen;
}

class EveryLayout : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryLayout, MatchesOracleAndRoundTrips) {
  const GpuModel& m = *Catalog::builtin().find_model(GetParam());
  std::set<Key> layouts = enumerate(m);
  ASSERT_GT(layouts.size(), 10u);
  std::size_t full = 0;
  for (const Key& k : layouts) {
    GpuLayout rebuilt(m);
    for (auto it = k.rbegin(); it != k.rend(); ++it) {  // a different order than discovery
      const Profile* p = m.find_profile(it->first);
      auto pl = std::ranges::find(p->placements, it->second, &Placement::start);
      ASSERT_TRUE(rebuilt.place(*p, *pl)) << m.name;
    }
    ASSERT_EQ(key_of(rebuilt), k);
    int compute = 0;
    std::uint32_t mask = 0;
    for (const auto& inst : rebuilt.instances()) {
      EXPECT_EQ(mask & inst.placement.mask(), 0u);
      mask |= inst.placement.mask();
      compute += inst.profile->compute_slices;
    }
    EXPECT_EQ(mask, rebuilt.used_memory_mask());
    EXPECT_LE(compute, m.compute_slices);
    // what_fits() must agree with a direct scan, and a full layout admits nothing.
    const auto fitting = rebuilt.what_fits();
    for (const auto& p : m.profiles) {
      bool listed = std::ranges::find(fitting, &p) != fitting.end();
      EXPECT_EQ(listed, !rebuilt.free_placements(p).empty());
    }
    if (rebuilt.what_fits().empty()) ++full;
    // Release in discovery order: always back to empty, masks clean.
    for (const auto& [name, start] : k) {
      const Profile* p = m.find_profile(name);
      auto pl = std::ranges::find(p->placements, start, &Placement::start);
      ASSERT_TRUE(rebuilt.release(*pl));
    }
    EXPECT_TRUE(rebuilt.empty());
    EXPECT_EQ(rebuilt.used_memory_mask(), 0u);
    EXPECT_EQ(rebuilt.used_compute_slices(), 0);
  }
  EXPECT_GT(full, 0u);
  std::printf("%s: %zu legal layouts, %zu of them full\n", m.name.c_str(), layouts.size(), full);
}

// With MIG off a GPU holds nothing or itself: no MIG instance beside or instead of it.
TEST_P(EveryLayout, WithMigOffHoldsOnlyTheWholeGpu) {
  const GpuModel& m = *Catalog::builtin().find_model(GetParam());
  const Profile* whole = m.whole_gpu_profile();
  ASSERT_NE(whole, nullptr) << m.name;
  const std::set<Key> nothing_or_itself{Key{}, Key{{whole->name, 0}}};
  EXPECT_EQ(enumerate(m, GpuMode::whole), nothing_or_itself);
}

INSTANTIATE_TEST_SUITE_P(Catalog, EveryLayout,
                         ::testing::Values("A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB",
                                           "A30-24GB"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::ranges::replace(n, '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace vgpu
