// The job_submit filter's table is generated from the policy and the catalog (submit_table.h).
#include "vgpu/policy/submit_table.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

PolicyFile policy(std::string_view text) {
  auto parsed = parse_policy(text, "site-policy.json");
  if (!parsed) throw std::runtime_error(parsed.error().message);
  return *parsed;
}

constexpr std::string_view kTwoPartitions = R"({
  "version": 1,
  "partitions": {
    "train": {"profiles": ["7g.80gb", "3g.40gb"]},
    "infer": {"profiles": {"H100-80GB": ["1g.10gb"], "A30-24GB": ["1g.6gb"]}}
  }
})";

TEST(SubmitTable, EachPartitionOffersWhatItsPolicyAllowsOnAnyModelInCatalogOrder) {
  auto table = render_submit_table(policy(kTwoPartitions), Catalog::builtin(), "infer");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_NE(table->find(R"(return { default = "infer", partitions = {)"), std::string::npos) << *table;
  EXPECT_NE(table->find(R"(["infer"] = {"1g.10gb", "1g.6gb"},)"), std::string::npos) << *table;
  EXPECT_NE(table->find(R"(["train"] = {"3g.40gb", "7g.80gb"},)"), std::string::npos) << *table;
  EXPECT_NE(table->find("from site-policy.json"), std::string::npos) << *table;
  EXPECT_NE(table->find("}, shares = {\n} }"), std::string::npos) << "no share types, none listed:\n" << *table;
  EXPECT_EQ(table->find("prefer"), std::string::npos) << "no preferences unless planner.node_features";
}

TEST(SubmitTable, NodeFeaturesGiveTheFilterItsPreferencesOnThePolicysPartitions) {
  auto p = policy(kTwoPartitions);
  p.planner.node_features = true;
  auto table = render_submit_table(p, Catalog::builtin(), "infer");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_NE(table->find(R"(}, prefer = { gpu_jobs = "vgpu_in_use", part_jobs = "vgpu_partly_used_gpu", )"
                        R"(cpu_jobs = "vgpu_no_idle_gpu", parts = { ["1g.10gb"] = true, ["1g.6gb"] = true, )"
                        R"(["3g.40gb"] = true, }, partitions = { ["infer"] = true, ["train"] = true, } } })"),
            std::string::npos)
      << "7g.80gb is a whole H100, not a part:\n"
      << *table;
}

TEST(SubmitTable, APartOfAGpuIsAShareOrSmallerThanTheWholeGpuOnEveryModelThatHasIt) {
  auto p = policy(R"({"version": 1,
    "classes": {"small": {"min_memory_gb": 10}, "big": {"min_memory_gb": 70}},
    "share_types": {"quarter": {"instance": "7g.80gb", "shares": 4}},
    "partitions": {"all": {}}})");
  const Catalog catalog = Catalog::with_classes(Catalog::builtin(), p.site_types());
  EXPECT_TRUE(is_part_of_a_gpu(p, catalog, "1g.10gb"));
  EXPECT_FALSE(is_part_of_a_gpu(p, catalog, "7g.80gb"));
  EXPECT_TRUE(is_part_of_a_gpu(p, catalog, "small"));
  EXPECT_FALSE(is_part_of_a_gpu(p, catalog, "big")) << "7g.80gb on an H100";
  EXPECT_TRUE(is_part_of_a_gpu(p, catalog, "quarter")) << "a share of a whole-GPU instance";
  EXPECT_FALSE(is_part_of_a_gpu(p, catalog, "desktop")) << "not a profile: a viz pool";
}

TEST(SubmitTable, APartitionWithoutAProfileListOffersEveryProfileOfEveryModel) {
  auto table = render_submit_table(policy(R"({"version": 1, "partitions": {"all": {}}})"), Catalog::builtin(), "all");
  ASSERT_TRUE(table) << table.error().message;
  for (const auto& model : Catalog::builtin().models())
    for (const auto& p : model.profiles)
      EXPECT_NE(table->find("\"" + p.name + "\""), std::string::npos) << p.name << " missing:\n" << *table;
}

TEST(SubmitTable, TheDefaultPartitionMustBeInThePolicy) {
  auto table = render_submit_table(policy(kTwoPartitions), Catalog::builtin(), "debug");
  ASSERT_FALSE(table);
  EXPECT_EQ(table.error().message, "default partition 'debug' is not in the policy site-policy.json");
}

}  // namespace
}  // namespace vgpu
