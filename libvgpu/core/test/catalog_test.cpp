#include "vgpu/core/catalog.h"

#include <gtest/gtest.h>

#include "vgpu/core/catalog_json.h"
#include "vgpu/core/gpu_layout.h"

namespace vgpu {
namespace {

TEST(Catalog, HasEveryModelTheIssueNames) {
  for (const char* name : {"A100-40GB", "A100-80GB", "A30-24GB", "H100-80GB", "H100-94GB", "H200-141GB"})
    EXPECT_NE(Catalog::builtin().find_model(name), nullptr) << name;
}

TEST(Catalog, H100ProfilesMatchThePublishedListing) {
  const GpuModel& m = *Catalog::builtin().find_model("H100-80GB");
  struct Row {
    const char* name;
    int id, cs, ms, sm, max;
    std::vector<int> starts;
  };
  std::vector<Row> rows = {{"1g.10gb", 19, 1, 1, 16, 7, {0, 1, 2, 3, 4, 5, 6}},
                           {"1g.10gb+me", 20, 1, 1, 16, 1, {0, 1, 2, 3, 4, 5, 6}},
                           {"1g.20gb", 15, 1, 2, 26, 4, {0, 2, 4, 6}},
                           {"2g.20gb", 14, 2, 2, 32, 3, {0, 2, 4}},
                           {"3g.40gb", 9, 3, 4, 60, 2, {0, 4}},
                           {"4g.40gb", 5, 4, 4, 64, 1, {0}},
                           {"7g.80gb", 0, 7, 8, 132, 1, {0}},
                           // Not NVML's: the GPU itself with MIG off.
                           {"whole.80gb", kWholeGpuProfileId, 7, 8, 132, 1, {0}}};
  ASSERT_EQ(m.profiles.size(), rows.size());
  for (const auto& r : rows) {
    const Profile* p = m.find_profile(r.name);
    ASSERT_NE(p, nullptr) << r.name;
    EXPECT_EQ(p->nvml_profile_id, r.id) << r.name;
    EXPECT_EQ(p->compute_slices, r.cs) << r.name;
    EXPECT_EQ(p->memory_slices, r.ms) << r.name;
    EXPECT_EQ(p->sm_count, r.sm) << r.name;
    EXPECT_EQ(p->max_instances, r.max) << r.name;
    std::vector<int> starts;
    for (const auto& pl : p->placements) {
      starts.push_back(pl.start);
      EXPECT_EQ(pl.size, r.ms) << r.name;
    }
    EXPECT_EQ(starts, r.starts) << r.name;
  }
}

TEST(Catalog, EveryPlacementFitsInsideItsGpu) {
  for (const auto& m : Catalog::builtin().models())
    for (const auto& p : m.profiles) {
      EXPECT_FALSE(p.placements.empty()) << m.name << " " << p.name;
      EXPECT_LE(p.compute_slices, m.compute_slices);
      EXPECT_LE(p.memory_mib, m.memory_mib) << m.name << " " << p.name;
      for (const auto& pl : p.placements) EXPECT_LE(pl.end(), m.memory_slices) << m.name << " " << p.name;
    }
}

// AMD's MI300X partitioning overview: 8 XCDs of 38 CUs, 192 GB; SPX/DPX/QPX/CPX give 1/2/4/8
// partitions, each with its even share of memory in NPS1 (CPX: 38 CUs and 24 GB).
TEST(Catalog, Mi300xModesMatchAmdsPartitioningDocumentation) {
  const GpuModel& m = *Catalog::builtin().find_model("MI300X-192GB");
  EXPECT_EQ(m.vendor, "amd");
  EXPECT_EQ(m.partitioning, Partitioning::uniform);
  EXPECT_EQ(m.sm_count, 304);
  struct Row {
    const char* name;
    AmdPartitionMode mode;
    int xcds, cus, mib, count;
  };
  for (const Row& r : std::vector<Row>{{"cpx.24gb", AmdPartitionMode::cpx, 1, 38, 24576, 8},
                                       {"qpx.48gb", AmdPartitionMode::qpx, 2, 76, 49152, 4},
                                       {"dpx.96gb", AmdPartitionMode::dpx, 4, 152, 98304, 2},
                                       {"spx.192gb", AmdPartitionMode::spx, 8, 304, 196608, 1}}) {
    const Profile* p = m.find_profile(r.name);
    ASSERT_NE(p, nullptr) << r.name;
    EXPECT_EQ(p->nvml_profile_id, static_cast<int>(r.mode)) << r.name;
    EXPECT_EQ(p->compute_slices, r.xcds) << r.name;
    EXPECT_EQ(p->sm_count, r.cus) << r.name;
    EXPECT_EQ(p->memory_mib, r.mib) << r.name;
    EXPECT_EQ(p->max_instances, r.count) << r.name;
    ASSERT_EQ(p->placements.size(), static_cast<std::size_t>(r.count)) << r.name;
    EXPECT_EQ(p->placements.back().end(), 8) << r.name;
  }
  EXPECT_EQ(Catalog::builtin().find_model_for_product("AMD Instinct MI300X")->name, "MI300X-192GB");
  EXPECT_EQ(Catalog::builtin().find_model("MI325X-256GB")->find_profile("cpx.32gb")->memory_mib, 32768);
}

// The issue's example classes on each vendor's models: the smallest profile that satisfies both
// the memory and the compute share.
TEST(GpuClasses, EachModelRealizesAClassAsItsSmallestSufficientProfile) {
  const GpuClass small{"small", 10, 0.125, "", 0}, medium{"medium", 20, 0.25, "", 0}, large{"large", 80, 0.0, "", 0};
  auto realized = [](const char* model, const GpuClass& c) {
    const Profile* p = realize(*Catalog::builtin().find_model(model), c);
    return p ? p->name : std::string("none");
  };
  EXPECT_EQ(realized("H100-80GB", small), "1g.10gb");
  EXPECT_EQ(realized("A100-40GB", small), "1g.10gb");  // 1g.5gb has too little memory
  EXPECT_EQ(realized("MI300X-192GB", small), "cpx.24gb");
  EXPECT_EQ(realized("H100-80GB", medium), "2g.20gb");
  EXPECT_EQ(realized("A100-40GB", medium), "3g.20gb");  // 2g.10gb has too little memory
  EXPECT_EQ(realized("MI300X-192GB", medium), "qpx.48gb");
  EXPECT_EQ(realized("H100-80GB", large), "7g.80gb");
  EXPECT_EQ(realized("A100-40GB", large), "none");
  EXPECT_EQ(realized("MI300X-192GB", large), "dpx.96gb");
  EXPECT_EQ(realized("A30-24GB", small), "2g.12gb");  // never the +me variant
}

// A share type names its instance exactly or by need, and exists only where it splits that way.
TEST(GpuClasses, AShareTypeIsRealizedWhereItsInstanceSplitsIntoItsShares) {
  const GpuClass quarter{"quarter", 0, 0.0, "3g.40gb", 4}, tiny{"tiny", 0, 0.0, "1g.10gb", 48},
      small_half{"small-half", 10, 0.125, "", 2};
  const GpuModel& h100 = *Catalog::builtin().find_model("H100-80GB");
  ASSERT_NE(realize(h100, quarter), nullptr);
  EXPECT_EQ(realize(h100, quarter)->name, "3g.40gb");
  EXPECT_EQ(realize(*Catalog::builtin().find_model("A30-24GB"), quarter), nullptr) << "an A30 has no 3g.40gb";
  EXPECT_EQ(realize(h100, tiny), nullptr) << "48 shares of 1g.10gb would be under 512 MiB each";
  EXPECT_EQ(realize(h100, small_half)->name, "1g.10gb");
  const Catalog c = Catalog::with_classes(Catalog::builtin(), std::vector<GpuClass>{quarter, tiny, small_half});
  const Profile* q = c.find_model("H100-80GB")->find_profile("quarter");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shares, 4);
  EXPECT_EQ(q->realizes, "3g.40gb");
  EXPECT_EQ(c.find_model("H100-80GB")->find_profile("tiny"), nullptr);
  EXPECT_EQ(c.find_model("H100-80GB")->find_profile("3g.40gb")->shares, 0) << "hardware profiles are held whole";
}

TEST(GpuClasses, ACatalogWithClassesNamesThemAfterTheHardwareProfiles) {
  const std::vector<GpuClass> classes{{"small", 10, 0.125, "", 0}, {"large", 80, 0.0, "", 0}};
  const Catalog c = Catalog::with_classes(Catalog::builtin(), classes);
  const GpuModel& mi300x = *c.find_model("MI300X-192GB");
  const Profile* small = mi300x.find_profile("small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->realizes, "cpx.24gb");
  EXPECT_EQ(small->hardware_name(), "cpx.24gb");
  EXPECT_EQ(small->placements.size(), 8u);
  EXPECT_EQ(mi300x.find_profile_by_nvml_id(small->nvml_profile_id)->name, "cpx.24gb");
  EXPECT_EQ(c.find_model("A100-40GB")->find_profile("large"), nullptr) << "A100-40GB cannot realize it";
  EXPECT_TRUE(compare_models(*Catalog::builtin().find_model("MI300X-192GB"), mi300x).empty());
  // The same rules hold for a class as for what it realizes: one mode per AMD GPU.
  GpuLayout gpu(mi300x);
  ASSERT_TRUE(gpu.place(*small, {0, 1}));
  EXPECT_TRUE(gpu.place(*mi300x.find_profile("cpx.24gb"), {1, 1}));
  EXPECT_FALSE(gpu.place(*mi300x.find_profile("large"), {4, 4}));
}

TEST(Catalog, NvmlProductNamesMapToModels) {
  EXPECT_EQ(Catalog::builtin().find_model_for_product("NVIDIA H100 80GB HBM3")->name, "H100-80GB");
  EXPECT_EQ(Catalog::builtin().find_model_for_product("NVIDIA A100-SXM4-40GB")->name, "A100-40GB");
  EXPECT_EQ(Catalog::builtin().find_model_for_product("Tesla T4"), nullptr);
}

TEST(Catalog, UnknownProfileErrorListsValidProfiles) {
  const GpuModel& m = *Catalog::builtin().find_model("H100-80GB");
  auto r = Catalog::builtin().require_profile(m, "9g.99gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "profile 9g.99gb: unknown profile on H100-80GB (valid: 1g.10gb, 1g.10gb+me, 1g.20gb, "
            "2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb, whole.80gb)");
}

TEST(Catalog, UnknownModelErrorListsKnownModels) {
  auto r = Catalog::builtin().require_model("V100");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("known: A100-40GB"), std::string::npos) << r.error().message;
}

TEST(Catalog, JsonRoundTripsEveryModel) {
  for (const auto& m : Catalog::builtin().models()) {
    auto back = model_from_json(to_json(m), "model");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_TRUE(compare_models(m, *back).empty());
    EXPECT_EQ(back->nvml_names, m.nvml_names);
    EXPECT_EQ(back->vendor, m.vendor);
    EXPECT_EQ(back->partitioning, m.partitioning);
  }
}

TEST(Catalog, JsonLoaderNamesTheBadField) {
  auto j = to_json(*Catalog::builtin().find_model("A30-24GB"));
  j["profiles"][2]["placements"][1]["size"] = "two";
  auto r = model_from_json(j, "fixture.gpus[0]");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fixture.gpus[0].profiles[2].placements[1].size: must be an integer");
  j = to_json(*Catalog::builtin().find_model("A30-24GB"));
  j["profiles"][0]["colour"] = "red";
  r = model_from_json(j, "m");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("m.profiles[0].colour: unknown field (known here: ")) << r.error().message;
}

TEST(Catalog, CompareModelsReportsEachDifferingField) {
  GpuModel device = *Catalog::builtin().find_model("H100-80GB");
  device.profiles[4].memory_mib = 40192;
  device.profiles[2].placements.pop_back();
  device.profiles.erase(device.profiles.begin() + 6);  // 7g.80gb
  device.profiles.pop_back();                          // whole.80gb, which NVML never lists: no difference
  auto diffs = compare_models(*Catalog::builtin().find_model("H100-80GB"), device);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_EQ(diffs[0], "1g.20gb: placements {0,2}{2,2}{4,2}{6,2} != {0,2}{2,2}{4,2}");
  EXPECT_EQ(diffs[1], "3g.40gb: memory_mib 40448 != 40192");
  EXPECT_EQ(diffs[2], "7g.80gb: missing on the device");
}

TEST(ProfileName, AcceptsRealSpellings) {
  for (const char* ok : {"1g.10gb", "1g.10gb+me", "7g.141gb", "1g.6gb", "4g.24gb", "1g.24gb+gfx", "cpx.24gb",
                         "spx.192gb", "qpx.64gb", "whole.80gb", "whole.141gb"})
    EXPECT_TRUE(parse_profile_name(ok)) << ok;
}

TEST(Catalog, EveryNvidiaMigModelHasItsWholeGpuAndAmdModelsDoNot) {
  for (const auto& m : Catalog::builtin().models()) {
    const Profile* whole = m.whole_gpu_profile();
    if (m.vendor == "amd") {
      EXPECT_EQ(whole, nullptr) << m.name << ": SPX is already the whole GPU";
      continue;
    }
    ASSERT_NE(whole, nullptr) << m.name;
    EXPECT_EQ(whole->memory_mib, m.memory_mib) << m.name;
    EXPECT_EQ(whole->sm_count, m.sm_count) << m.name;
    EXPECT_EQ(whole->placements, (std::vector<Placement>{{0, m.memory_slices}})) << m.name;
    EXPECT_TRUE(whole->name.starts_with("whole.")) << whole->name;
  }
  EXPECT_EQ(Catalog::builtin().find_model("H200-141GB")->whole_gpu_profile()->name, "whole.141gb");
}

TEST(Catalog, JsonWholeGpuFlagMustAgreeWithTheName) {
  auto j = to_json(*Catalog::builtin().find_model("H100-80GB"));
  ASSERT_EQ(j["profiles"][7]["name"], "whole.80gb");
  ASSERT_TRUE(model_from_json(j, "m"));
  j["profiles"][7].erase("whole_gpu");
  auto r = model_from_json(j, "m");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "m.profiles[7].whole_gpu: a profile is the whole GPU exactly when its name is whole.<M>gb ('whole.80gb')");
  j = to_json(*Catalog::builtin().find_model("H100-80GB"));
  j["profiles"][0]["whole_gpu"] = true;
  EXPECT_FALSE(model_from_json(j, "m"));
}

// Only Ampere needs a GPU reset to take a new MIG mode (MIG user guide, "Deployment
// Considerations"); the planner never switches those models (docs/policy.md, mig_mode).
TEST(Catalog, OnlyAmpereModelsNeedAResetToSwitchMigModeAndTheJsonSaysSo) {
  std::vector<std::string> needing;
  for (const auto& m : Catalog::builtin().models())
    if (m.mig_switch_needs_reset) needing.push_back(m.name);
  EXPECT_EQ(needing, (std::vector<std::string>{"A100-40GB", "A100-80GB", "A30-24GB"}));
  auto j = to_json(*Catalog::builtin().find_model("A30-24GB"));
  EXPECT_EQ(j["mig_switch_needs_reset"], true);
  auto back = model_from_json(j, "m");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->mig_switch_needs_reset);
  EXPECT_FALSE(to_json(*Catalog::builtin().find_model("H200-141GB")).contains("mig_switch_needs_reset"));
  j["mig_switch_needs_reset"] = "yes";
  auto bad = model_from_json(j, "m");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "m.mig_switch_needs_reset: must be true or false");
}

TEST(ProfileName, RejectsMalformedWithReason) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const auto& c : std::vector<Case>{{"", "empty"},
                                         {"3g", "missing 'g.'"},
                                         {"g.10gb", "must start with"},
                                         {"03g.40gb", "must start with"},
                                         {"3g.40", "must end in 'gb'"},
                                         {"3g.40gb+xx", "unknown suffix"},
                                         {"3g.gb", "missing memory size"},
                                         {"3g.40gb;rm -rf /", "unknown suffix"},
                                         {"cpx.", "missing memory size"},
                                         {"cpx.024gb", "missing memory size"},
                                         {"cpx.24", "must end in 'gb'"},
                                         {"cpx.24gb+me", "must end in 'gb'"},
                                         {"xpx.24gb", "must start with"}}) {
    auto r = parse_profile_name(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.why), std::string::npos) << c.text << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace vgpu
