// "classes": requests by need, named like GRES types, realized per model, usable wherever a
// partition names profiles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vgpu/policy/policy.h"

namespace vgpu {
namespace {

using nlohmann::json;

json doc_with_classes(json classes, json profiles) {
  json doc = json::parse(R"({"version": 1, "partitions": {"p": {}}})");
  doc["classes"] = std::move(classes);
  doc["partitions"]["p"]["profiles"] = std::move(profiles);
  return doc;
}

std::string errors_of(const json& doc) {
  std::string out;
  for (const auto& d : check_policy(doc.dump(2), "t.json").diagnostics) out += d.to_string() + "\n";
  return out;
}

TEST(PolicyClasses, AClassIsNamedInAPartitionAndRealizedOnEveryModelThatCan) {
  auto doc = doc_with_classes(json::parse(R"({"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125},
                                              "large": {"min_memory_gb": 80}})"),
                              json::parse(R"(["small", "large", "1g.10gb"])"));
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  ASSERT_EQ(policy->classes.size(), 2u);
  EXPECT_EQ(policy->classes[0], (GpuClass{"large", 80, 0.0, "", 0}));
  EXPECT_EQ(policy->classes[1], (GpuClass{"small", 10, 0.125, "", 0}));
  const Catalog with = Catalog::with_classes(Catalog::builtin(), policy->classes);
  const PartitionPolicy& p = *policy->partition("p");
  // The catalog's order: hardware profiles, then the classes by name.
  EXPECT_EQ(p.allowed_profiles_for(*with.find_model("MI300X-192GB")), (std::vector<std::string>{"large", "small"}));
  EXPECT_EQ(p.allowed_profiles_for(*with.find_model("A100-40GB")), (std::vector<std::string>{"1g.10gb", "small"}))
      << "an A100-40GB realizes no 80 GB class";
}

// docs/policy.md: a class may stand wherever a profile does, the idle layout included. Each model
// realizes it as it would for a job, so one idle layout serves a partition of H100 and H200 nodes.
TEST(PolicyClasses, AClassInTheIdleLayoutIsRealizedOnEachModel) {
  auto doc = doc_with_classes(json::parse(R"({"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125}})"),
                              json::parse(R"(["small", "3g.40gb"])"));
  doc["partitions"]["p"]["idle_layout"] = json::parse(R"(["small", "small"])");
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_EQ(policy->partition("p")->idle_layout, (std::vector<std::string>{"small", "small"}));
  const Catalog with = Catalog::with_classes(Catalog::builtin(), policy->classes);
  for (const char* model : {"H100-80GB", "H200-141GB"}) {
    auto layout = place_idle_layout(*policy->partition("p"), *with.find_model(model));
    ASSERT_TRUE(layout) << model << ": " << layout.error().message;
    EXPECT_EQ(layout->instances().size(), 2u) << model << ": " << layout->describe();
    for (const auto& placed : layout->instances()) {
      EXPECT_EQ(placed.profile->name, "small") << model;
      EXPECT_EQ(placed.profile->realizes, std::string(model) == "H100-80GB" ? "1g.10gb" : "1g.18gb") << model;
    }
  }
  // A share type is a part of an instance, not an instance: it has no place in an idle layout.
  doc["share_types"] = json::parse(R"({"quarter": {"instance": "3g.40gb", "shares": 4}})");
  doc["partitions"]["p"]["profiles"] = json::parse(R"(["small", "quarter"])");
  doc["partitions"]["p"]["idle_layout"] = json::parse(R"(["quarter"])");
  EXPECT_NE(errors_of(doc).find("partitions.p.idle_layout[0]: quarter is a share type: an idle layout lists "
                                "instances (a profile or a class)"),
            std::string::npos)
      << errors_of(doc);
}

TEST(PolicyClasses, BadClassesAreNamedWithTheirField) {
  auto bad = [](const char* classes) {
    return errors_of(doc_with_classes(json::parse(classes), json::parse(R"(["1g.10gb"])")));
  };
  EXPECT_NE(bad(R"({"2g.20gb": {"min_memory_gb": 10}})").find("class name is spelled like a profile"),
            std::string::npos);
  EXPECT_NE(
      bad(R"({"huge": {"min_memory_gb": 1000}})").find("classes.huge: no known GPU model has a profile with 1000 GB"),
      std::string::npos);
  EXPECT_NE(bad(R"({"small": {"min_compute_fraction": 1.5}})")
                .find("classes.small.min_compute_fraction: must be a number above 0"),
            std::string::npos);
  EXPECT_NE(bad(R"({"small": {"min_memory": 10}})").find("classes.small.min_memory: unknown field"), std::string::npos);
  EXPECT_NE(bad(R"({"free": {"min_memory_gb": 10}})").find("classes.free: class name must be"), std::string::npos);
  // A partition may not name a class the file does not define.
  EXPECT_NE(errors_of(doc_with_classes(json::object(), json::parse(R"(["small"])"))).find("partitions.p.profiles[0]"),
            std::string::npos);
}

}  // namespace
}  // namespace vgpu
