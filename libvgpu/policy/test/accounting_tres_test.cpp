// AccountingStorageTRES is generated from the policy (accounting_tres.h), from the same list of
// offered types as the job_submit table.
#include "vgpu/policy/accounting_tres.h"

#include <gtest/gtest.h>

#include "vgpu/policy/submit_table.h"

namespace vgpu {
namespace {

PolicyFile policy(std::string_view text) {
  auto parsed = parse_policy(text, "site-policy.json");
  if (!parsed) throw std::runtime_error(parsed.error().message);
  return *parsed;
}

TEST(AccountingTres, NamesTheGresAndEachOfferedTypeOnceAcrossPartitions) {
  auto line = render_accounting_tres(policy(R"({
    "version": 1,
    "partitions": {
      "train": {"profiles": ["7g.80gb", "3g.40gb"]},
      "infer": {"profiles": ["1g.10gb", "3g.40gb"]}
    }
  })"),
                                     Catalog::builtin());
  EXPECT_EQ(line, "gres/vgpu,gres/vgpu:1g.10gb,gres/vgpu:3g.40gb,gres/vgpu:7g.80gb");
}

TEST(AccountingTres, EveryTypeTheSubmitFilterAcceptsIsAccounted) {
  auto p = policy(R"({"version": 1, "partitions": {"all": {}}})");
  auto line = render_accounting_tres(p, Catalog::builtin()) + ",";
  for (const auto& t : types_offered(p.partitions.at(0), Catalog::builtin()))
    EXPECT_NE(line.find("gres/vgpu:" + t + ","), std::string::npos) << t << " missing from " << line;
}

}  // namespace
}  // namespace vgpu
