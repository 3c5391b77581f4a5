// slurmd-report.json: what slurmd itself reports, written by the plugin, read by the planner.
#include "vgpu/contract/slurmd_report.h"

#include <gtest/gtest.h>

namespace vgpu::contract {
namespace {

// The round trip itself is in records_roundtrip_test.cpp, with every other record.
TEST(SlurmdReport, ZeroCountsAreLeftOutWhenWritten) {
  auto text = render_slurmd_report({"n1", 1, 14, {{"1g.10gb", 0}, {"2g.20gb", 1}}});
  auto parsed = parse_slurmd_report(text, "n1");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->counts, (std::map<std::string, std::uint64_t, std::less<>>{{"2g.20gb", 1}}));
}

TEST(SlurmdReport, StrictAboutWhatItReads) {
  const std::string head = R"({"format":"slurm-vgpu-slurmd-report","version":1,"node":"n1","generation":3,"total":14,)";
  struct Case {
    std::string text;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {head + R"("counts":{},"extra":1})",
            "extra: unknown field (known here: format, version, node, generation, total, counts)"},
           {head + R"("counts":{"1g.10gb":0}})", "count must be a positive integer"},
           {head + R"("counts":{"free":3}})", "not a valid type name"},
           {head + R"("counts":{"1g.10gb":10,"2g.20gb":5}})", "counts add up to more than field 'total' (14)"},
           {R"({"format":"slurm-vgpu-slurmd-report","version":1,"node":"n1","generation":3,"counts":{}})",
            "total: required field missing"},
           {R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":3,"total":14,"counts":{}})",
            "format is 'slurm-vgpu-advertisement'"},
           {head + R"("counts":[]})", "field 'counts' must be an object"},
       }) {
    auto parsed = parse_slurmd_report(c.text, "n1");
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_NE(parsed.error().message.find(c.expect), std::string::npos) << parsed.error().message;
  }
  auto other = parse_slurmd_report(head + R"("counts":{}})", "n2");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("this is node 'n2'"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::contract
