#include "vgpu/core/gres_request.h"
#include "vgpu/contract/names.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(GresRequest, ParsesTypedRequestsAndLists) {
  auto r = parse_vgpu_gres("vgpu:3g.40gb:1");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"3g.40gb", 1}}));
  r = parse_vgpu_gres("gres:vgpu:1g.10gb:4,gpu:1,vgpu:viz-small");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"1g.10gb", 4}, {"viz-small", 1}}));
}

TEST(GresRequest, UntypedVgpuIsRefusedWithAnExample) {
  for (const char* text : {"vgpu:2", "vgpu", "gres:vgpu:1"}) {
    auto r = parse_vgpu_gres(text);
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find("must name a profile, e.g. vgpu:3g.40gb:1"), std::string::npos)
        << r.error().message;
  }
}

TEST(GresRequest, BadCountsAndTypesAreNamed) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const auto& c : std::vector<Case>{
           {"vgpu:3g.40gb:0", "count '0' must be a whole number from 1 to 4096"},
           {"vgpu:3g.40gb:-1", "count '-1'"},
           {"vgpu:3g.40gb:2x", "count '2x'"},
           {"vgpu:3g.40gb:99999", "count '99999'"},
           {"vgpu:9g.99:1", "must end in 'gb'"},
           {"vgpu:../../etc:1", "is not a vgpu type name"},
           {"vgpu:a$(id):1", "is not a vgpu type name"},
           {"vgpu:3g.40gb:1:2", "expected vgpu:<profile>[:<count>]"},
           {",vgpu:1g.10gb:1", "missing GRES name"},
       }) {
    auto r = parse_vgpu_gres(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << c.text << " -> " << r.error().message;
  }
}

// The GRES type alphabet has one owner (contract/names.h): what a job may ask for is exactly what
// the advertisement, the job records and VGPU_ALLOC accept.
TEST(GresRequest, TypeNamesFollowTheContractsOneAlphabet) {
  for (const std::string& name :
       std::vector<std::string>{"3g.40gb", "1g.10gb+me", "viz-small", "a", std::string(32, 'a'), std::string(33, 'a'),
                                "-x", ".x", "_x", "+x", "free", "never", "a b", "a/b", "a\x01"}) {
    const bool contract_ok = contract::is_valid_type_name(name);
    auto parsed = parse_vgpu_gres("vgpu:" + name + ":1");
    EXPECT_EQ(parsed.has_value(), contract_ok) << name << ": " << (parsed ? "" : parsed.error().message);
  }
}

TEST(GresRequest, ATypeAskedForTwiceIsRefusedNotSummed) {
  auto r = parse_vgpu_gres("vgpu:1g.10gb:2,gpu:1,vgpu:1g.10gb:3");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "gres 'vgpu:1g.10gb:3': type 1g.10gb is asked for more than once; ask for it once with the total count");
  EXPECT_FALSE(parse_vgpu_alloc("1g.10gb:2,1g.10gb:3"));
  EXPECT_TRUE(parse_vgpu_gres("vgpu:1g.10gb:2,vgpu:2g.20gb:3"));
}

TEST(GresRequest, AllocSummaryRoundTrips) {
  auto r = parse_vgpu_alloc("1g.10gb:2,7g.80gb:1");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"1g.10gb", 2}, {"7g.80gb", 1}}));
  EXPECT_TRUE(parse_vgpu_alloc("")->empty());
  auto bad = parse_vgpu_alloc("1g.10gb");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "VGPU_ALLOC entry '1g.10gb': expected <type>:<count>");
}

}  // namespace
}  // namespace vgpu
