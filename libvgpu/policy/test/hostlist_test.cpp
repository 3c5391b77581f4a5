#include "vgpu/policy/policy_hostlist.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

Hostlist parse_ok(std::string_view text) {
  auto list = Hostlist::parse(text);
  EXPECT_TRUE(list) << text << ": " << (list ? "" : list.error().message);
  return list ? std::move(*list) : *Hostlist::parse("unused-placeholder");
}

TEST(Hostlist, MatchesPlainNamesExactly) {
  auto list = parse_ok("gpu07");
  EXPECT_TRUE(list.matches("gpu07"));
  EXPECT_FALSE(list.matches("gpu7"));
  EXPECT_FALSE(list.matches("gpu070"));
  EXPECT_FALSE(list.matches("gpu0"));
  EXPECT_FALSE(list.matches(""));
}

TEST(Hostlist, MatchesRangesAndCommaSeparatedItems) {
  auto list = parse_ok("n[1-3],gpu07");
  for (auto name : {"n1", "n2", "n3", "gpu07"}) EXPECT_TRUE(list.matches(name)) << name;
  for (auto name : {"n0", "n4", "n01", "n", "gpu7", "n1x"}) EXPECT_FALSE(list.matches(name)) << name;
}

TEST(Hostlist, ZeroPaddedRangesNeedTheirWidth) {
  auto list = parse_ok("gpu[01-16]");
  EXPECT_TRUE(list.matches("gpu01"));
  EXPECT_TRUE(list.matches("gpu09"));
  EXPECT_TRUE(list.matches("gpu16"));
  EXPECT_FALSE(list.matches("gpu1"));
  EXPECT_FALSE(list.matches("gpu001"));
  EXPECT_FALSE(list.matches("gpu17"));
  EXPECT_FALSE(list.matches("gpu00"));
}

TEST(Hostlist, UnpaddedRangesRejectLeadingZeros) {
  auto list = parse_ok("n[1-10]");
  EXPECT_TRUE(list.matches("n9"));
  EXPECT_TRUE(list.matches("n10"));
  EXPECT_FALSE(list.matches("n01"));
  EXPECT_FALSE(list.matches("n11"));
}

TEST(Hostlist, WidthComesFromTheLowBoundAsSlurmDoes) {
  auto list = parse_ok("n[08-10]");
  EXPECT_TRUE(list.matches("n08"));
  EXPECT_TRUE(list.matches("n10"));
  EXPECT_FALSE(list.matches("n8"));
}

TEST(Hostlist, BracketListsAndSingleNumbers) {
  auto list = parse_ok("gpu[1,3,5-6]");
  for (auto name : {"gpu1", "gpu3", "gpu5", "gpu6"}) EXPECT_TRUE(list.matches(name)) << name;
  for (auto name : {"gpu2", "gpu4", "gpu7"}) EXPECT_FALSE(list.matches(name)) << name;
}

TEST(Hostlist, SeveralGroupsInOneName) {
  auto list = parse_ok("rack[1-2]-n[01-04]");
  EXPECT_TRUE(list.matches("rack1-n01"));
  EXPECT_TRUE(list.matches("rack2-n04"));
  EXPECT_FALSE(list.matches("rack3-n01"));
  EXPECT_FALSE(list.matches("rack1-n05"));
  EXPECT_FALSE(list.matches("rack1-n1"));
}

TEST(Hostlist, AdjacentDigitsAreSplitByBacktracking) {
  auto list = parse_ok("n[1-2]0");  // n10, n20
  EXPECT_TRUE(list.matches("n10"));
  EXPECT_TRUE(list.matches("n20"));
  EXPECT_FALSE(list.matches("n1"));
  auto two_groups = parse_ok("n[1-9][0-9]");
  EXPECT_TRUE(two_groups.matches("n10"));
  EXPECT_TRUE(two_groups.matches("n99"));
  EXPECT_FALSE(two_groups.matches("n9"));
}

TEST(Hostlist, HugeRangesMatchWithoutExpanding) {
  auto list = parse_ok("n[1-999999999]");
  EXPECT_TRUE(list.matches("n123456789"));
  EXPECT_FALSE(list.matches("n1234567890"));
}

TEST(Hostlist, KeepsTheTextAsWritten) { EXPECT_EQ(parse_ok("a,b[1-2]").text(), "a,b[1-2]"); }

TEST(Hostlist, RejectsBadSyntaxNamingTheProblem) {
  struct Case {
    const char* text;
    const char* message_part;
  };
  for (const auto& c : std::vector<Case>{
           {"", "empty"},
           {"n1,,n2", "empty host name between commas"},
           {"n1,", "empty host name"},
           {"n[3-1]", "runs backwards"},
           {"n[]", "empty brackets"},
           {"n[1-3", "without a matching ']'"},
           {"n1-3]", "without a matching '['"},
           {"n[1-[2]]", "without a matching ']'"},
           {"n[a-b]", "bounds must be numbers"},
           {"n[1-]", "bounds must be numbers"},
           {"n[1,,2]", "empty range"},
           {"n[1-2-3]", "bounds must be numbers"},
           {"n[1234567890]", "bounds must be numbers"},
           {"node 1", "' ' is not allowed"},
           {"nöde", "is not allowed"},
       }) {
    auto list = Hostlist::parse(c.text);
    ASSERT_FALSE(list) << c.text;
    EXPECT_NE(list.error().message.find(c.message_part), std::string::npos) << c.text << " -> " << list.error().message;
    EXPECT_NE(list.error().message.find("hostlist '"), std::string::npos) << list.error().message;
  }
}

TEST(Hostlist, RejectsOverlongText) {
  EXPECT_FALSE(Hostlist::parse(std::string(Hostlist::kMaxLength + 1, 'a')));
  EXPECT_TRUE(Hostlist::parse(std::string(Hostlist::kMaxLength, 'a')));
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

TEST(NodeList, AHostlistOrElseOneName) {
  NodeList range("n[1-3],gpu07");
  EXPECT_TRUE(range.contains("n2"));
  EXPECT_TRUE(range.contains("gpu07"));
  EXPECT_FALSE(range.contains("n4"));
  NodeList odd("n[1-");  // not a hostlist: taken as one name, never as a pattern
  EXPECT_TRUE(odd.contains("n[1-"));
  EXPECT_FALSE(odd.contains("n1"));
}

}  // namespace
}  // namespace vgpu
