// "share_types": parts of an instance, named like GRES types, offered only where a partition names
// them, refused with the model and the reason where the instance does not split that way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vgpu/policy/policy.h"
#include "vgpu/policy/submit_table.h"

namespace vgpu {
namespace {

using nlohmann::json;

json doc_with_share_types(json share_types, json profiles = json(nullptr)) {
  json doc = json::parse(R"({"version": 1, "classes": {"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125}},
                             "partitions": {"p": {}}})");
  doc["share_types"] = std::move(share_types);
  if (!profiles.is_null()) doc["partitions"]["p"]["profiles"] = std::move(profiles);
  return doc;
}

std::string errors_of(const json& doc) {
  std::string out;
  for (const auto& d : check_policy(doc.dump(2), "t.json").diagnostics) out += d.to_string() + "\n";
  return out;
}

TEST(PolicyShareTypes, AShareTypeOfAProfileOrAClassIsRealizedWithItsShareCount) {
  auto doc = doc_with_share_types(json::parse(R"({"quarter": {"instance": "3g.40gb", "shares": 4},
                                                  "small-half": {"instance": "small", "shares": 2}})"));
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  ASSERT_EQ(policy->share_types.size(), 2u);
  EXPECT_EQ(policy->share_types[0], (GpuClass{"quarter", 0, 0.0, "3g.40gb", 4}));
  EXPECT_EQ(policy->share_types[1], (GpuClass{"small-half", 10, 0.125, "", 2})) << "the class's needs, copied";
  ASSERT_EQ(policy->site_types().size(), 3u);
  const Catalog with = Catalog::with_classes(Catalog::builtin(), policy->site_types());
  const GpuModel& h100 = *with.find_model("H100-80GB");
  const Profile* quarter = h100.find_profile("quarter");
  ASSERT_NE(quarter, nullptr);
  EXPECT_EQ(quarter->realizes, "3g.40gb");
  EXPECT_EQ(quarter->shares, 4);
  EXPECT_EQ(h100.find_profile("small-half")->realizes, "1g.10gb");
  // A partition that lists them offers them, in the job_submit table too (in the catalog's model
  // order: the A100-40GB, first, has no 3g.40gb but realizes small-half).
  PolicyFile offering = *policy;
  offering.partitions[0].profile_rule = PartitionPolicy::ProfileRule::same_for_every_model;
  offering.partitions[0].profiles = {"1g.10gb", "quarter", "small-half"};
  EXPECT_EQ(offering.partitions[0].allowed_profiles_for(h100),
            (std::vector<std::string>{"1g.10gb", "quarter", "small-half"}));
  auto table = render_submit_table(offering, with, "p");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_NE(table->find(R"(["p"] = {"1g.10gb", "small-half", "quarter"})"), std::string::npos) << *table;
  // ...and says which are shares and whose: one user's by default (the filter adds --exclusive=user).
  EXPECT_NE(table->find("}, shares = {\n  [\"p\"] = {[\"small-half\"] = \"user\", [\"quarter\"] = \"user\"},\n} }"),
            std::string::npos)
      << *table;
  offering.partitions[0].share_across_users = true;
  table = render_submit_table(offering, with, "p");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_NE(table->find(R"(["p"] = {["small-half"] = "any", ["quarter"] = "any"})"), std::string::npos) << *table;
}

TEST(PolicyShareTypes, APartitionOffersOneByNamingIt) {
  auto doc = doc_with_share_types(json::parse(R"({"quarter": {"instance": "3g.40gb", "shares": 4}})"),
                                  json::parse(R"({"H100-80GB": ["1g.10gb", "quarter"]})"));
  EXPECT_EQ(errors_of(doc), "");
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  const Catalog with = Catalog::with_classes(Catalog::builtin(), policy->site_types());
  EXPECT_EQ(policy->partition("p")->allowed_profiles_for(*with.find_model("H100-80GB")),
            (std::vector<std::string>{"1g.10gb", "quarter"}));
}

TEST(PolicyShareTypes, APartitionWithoutAProfileListGivesWholeInstancesOnly) {
  auto doc = doc_with_share_types(json::parse(R"({"quarter": {"instance": "3g.40gb", "shares": 4}})"));
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  const Catalog with = Catalog::with_classes(Catalog::builtin(), policy->site_types());
  auto allowed = policy->partition("p")->allowed_profiles_for(*with.find_model("H100-80GB"));
  EXPECT_NE(std::ranges::find(allowed, "small"), allowed.end()) << "classes stay offered";
  EXPECT_EQ(std::ranges::find(allowed, "quarter"), allowed.end());
  EXPECT_FALSE(policy->partition("p")->share_across_users) << "one user per shared instance unless the admin widens it";
}

TEST(PolicyShareTypes, SharingAcrossUsersIsThePartitionsChoice) {
  auto doc = doc_with_share_types(json::parse(R"({"quarter": {"instance": "3g.40gb", "shares": 4}})"));
  doc["partitions"]["p"]["share_across_users"] = true;
  auto policy = parse_policy(doc.dump(), "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(policy->partition("p")->share_across_users);
  doc["partitions"]["p"]["share_across_users"] = "yes";
  EXPECT_NE(errors_of(doc).find("partitions.p.share_across_users"), std::string::npos);
}

TEST(PolicyShareTypes, BadShareTypesAreNamedWithTheirFieldAndTheModel) {
  auto bad = [](const char* types) { return errors_of(doc_with_share_types(json::parse(types))); };
  EXPECT_NE(
      bad(R"({"1g.5gb": {"instance": "3g.40gb", "shares": 4}})").find("share type name is spelled like a profile"),
      std::string::npos);
  EXPECT_NE(
      bad(R"({"small": {"instance": "3g.40gb", "shares": 4}})").find("share_types.small: \"small\" is already a class"),
      std::string::npos);
  EXPECT_NE(
      bad(R"({"q": {"instance": "huge", "shares": 4}})").find("share_types.q.instance: \"huge\" is neither a class"),
      std::string::npos);
  EXPECT_NE(
      bad(R"({"q": {"instance": "1g.10gb+me", "shares": 2}})").find("share_types.q.instance: 1g.10gb+me: a media"),
      std::string::npos);
  EXPECT_NE(bad(R"({"q": {"instance": "5g.99gb", "shares": 2}})")
                .find("share_types.q.instance: no known GPU model has 5g.99gb"),
            std::string::npos);
  EXPECT_NE(bad(R"({"q": {"instance": "3g.40gb", "shares": 1}})").find("share_types.q.shares: must be"),
            std::string::npos);
  EXPECT_NE(bad(R"({"q": {"instance": "3g.40gb", "shares": 49}})").find("share_types.q.shares: must be"),
            std::string::npos);
  EXPECT_NE(bad(R"({"q": {"instance": "3g.40gb"}})").find("share_types.q.shares: "), std::string::npos);
  EXPECT_NE(bad(R"({"q": {"shares": 2}})").find("share_types.q.instance: "), std::string::npos);
  EXPECT_NE(
      bad(R"({"q": {"instance": "3g.40gb", "shares": 2, "users": 2}})").find("share_types.q.users: unknown field"),
      std::string::npos);
  // 1g.10gb is 9,984 MiB on an H100: 48 shares would leave 208 MiB each, no room beside a context.
  const std::string tiny = bad(R"({"tiny": {"instance": "1g.10gb", "shares": 48}})");
  EXPECT_NE(tiny.find("share_types.tiny.shares: on H100-80GB: profile 1g.10gb: 48 shares of"), std::string::npos)
      << tiny;
  // A partition may not name a share type the file does not define.
  EXPECT_NE(
      errors_of(doc_with_share_types(json::object(), json::parse(R"(["quarter"])"))).find("partitions.p.profiles[0]"),
      std::string::npos);
}

}  // namespace
}  // namespace vgpu
