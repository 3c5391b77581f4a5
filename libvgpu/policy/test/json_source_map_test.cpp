#include "vgpu/policy/json_source_map.h"

#include <gtest/gtest.h>

#include <string>

namespace vgpu {
namespace {

std::pair<int, int> value_at(const JsonSourceMap& map, std::string_view pointer) {
  const auto* loc = map.find(pointer);
  EXPECT_NE(loc, nullptr) << pointer;
  return loc ? std::pair(loc->value.line, loc->value.column) : std::pair(0, 0);
}

std::pair<int, int> key_at(const JsonSourceMap& map, std::string_view pointer) {
  const auto* loc = map.find(pointer);
  EXPECT_NE(loc, nullptr) << pointer;
  return loc ? std::pair(loc->key.line, loc->key.column) : std::pair(0, 0);
}

JsonSourceMap scan_ok(std::string_view text) {
  auto map = JsonSourceMap::scan(text);
  EXPECT_TRUE(map) << (map ? "" : map.error().message);
  return map ? std::move(*map) : JsonSourceMap{};
}

JsonSyntaxError scan_bad(std::string_view text) {
  auto map = JsonSourceMap::scan(text);
  EXPECT_FALSE(map) << "accepted: " << text;
  return map ? JsonSyntaxError{} : map.error();
}

TEST(JsonSourceMap, RecordsKeyAndValuePositionsOfTopLevelMembers) {
  auto map = scan_ok("{\"a\": 1,\n \"b\": true}");
  EXPECT_EQ(value_at(map, ""), std::pair(1, 1));
  EXPECT_EQ(key_at(map, "/a"), std::pair(1, 2));
  EXPECT_EQ(value_at(map, "/a"), std::pair(1, 7));
  EXPECT_EQ(key_at(map, "/b"), std::pair(2, 2));
  EXPECT_EQ(value_at(map, "/b"), std::pair(2, 7));
}

TEST(JsonSourceMap, RecordsNestedObjectsAndArrayElements) {
  auto map = scan_ok(
      "{\n"
      "  \"p\": {\n"
      "    \"list\": [10, {\"x\": null}, [\"s\"]]\n"
      "  }\n"
      "}\n");
  EXPECT_EQ(value_at(map, "/p"), std::pair(2, 8));
  EXPECT_EQ(value_at(map, "/p/list"), std::pair(3, 13));
  EXPECT_EQ(value_at(map, "/p/list/0"), std::pair(3, 14));
  EXPECT_EQ(value_at(map, "/p/list/1"), std::pair(3, 18));
  EXPECT_EQ(key_at(map, "/p/list/1/x"), std::pair(3, 19));
  EXPECT_EQ(value_at(map, "/p/list/1/x"), std::pair(3, 24));
  EXPECT_EQ(value_at(map, "/p/list/2/0"), std::pair(3, 32));
  EXPECT_EQ(map.find("/p/list/3"), nullptr);
  EXPECT_EQ(map.size(), 8u);
}

TEST(JsonSourceMap, ArrayElementsHaveNoKeyPosition) {
  auto map = scan_ok("[1, 2]");
  ASSERT_NE(map.find("/1"), nullptr);
  EXPECT_FALSE(map.find("/1")->key.known());
  EXPECT_EQ(map.key_position("/1"), map.value_position("/1"));
}

TEST(JsonSourceMap, KeysWithEscapesAreDecodedAndPointerEscaped) {
  auto map = scan_ok(R"({"a\"b": 1, "c/d": 2, "e~f": 3, "\u00e9": 4, "\ud83d\ude00": 5})");
  EXPECT_NE(map.find("/a\"b"), nullptr);
  EXPECT_NE(map.find("/c~1d"), nullptr);
  EXPECT_NE(map.find("/e~0f"), nullptr);
  EXPECT_NE(map.find("/\xC3\xA9"), nullptr);
  EXPECT_NE(map.find("/\xF0\x9F\x98\x80"), nullptr);
  EXPECT_EQ(map.find("/c/d"), nullptr);
}

TEST(JsonSourceMap, ColumnsCountCodePointsNotBytes) {
  // "é" is two bytes and "😀" four, but each is one column in an editor.
  auto map = scan_ok("{\"k\": \"\xC3\xA9\xF0\x9F\x98\x80\", \"n\": 1}");
  EXPECT_EQ(value_at(map, "/k"), std::pair(1, 7));
  EXPECT_EQ(key_at(map, "/n"), std::pair(1, 13));
  EXPECT_EQ(value_at(map, "/n"), std::pair(1, 18));
}

TEST(JsonSourceMap, CrLfLineEndsGiveTheSamePositionsAsLf) {
  std::string lf = "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n";
  std::string crlf;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto a = scan_ok(lf), b = scan_ok(crlf);
  for (auto pointer : {"", "/a", "/a/0", "/a/1"}) {
    EXPECT_EQ(value_at(a, pointer), value_at(b, pointer)) << pointer;
  }
  EXPECT_EQ(value_at(b, "/a/1"), std::pair(4, 5));
}

TEST(JsonSourceMap, ValuePositionFallsBackToTheNearestAncestor) {
  auto map = scan_ok("{\n \"p\": {\"q\": 1}}");
  SourcePos pos = map.value_position("/p/missing/deeper");
  EXPECT_EQ(pos.line, 2);
  EXPECT_EQ(pos.column, 7);
}

TEST(JsonSourceMap, ReportsDuplicateKeysWithBothPositions) {
  auto map = scan_ok("{\"a\": 1,\n \"a\": 2}");
  ASSERT_EQ(map.duplicate_keys().size(), 1u);
  const auto& dup = map.duplicate_keys()[0];
  EXPECT_EQ(dup.pointer, "/a");
  EXPECT_EQ(std::pair(dup.first.line, dup.first.column), std::pair(1, 2));
  EXPECT_EQ(std::pair(dup.again.line, dup.again.column), std::pair(2, 2));
  // The recorded value is the last one, as nlohmann keeps it.
  EXPECT_EQ(value_at(map, "/a"), std::pair(2, 7));
}

TEST(JsonSourceMap, SkipsAByteOrderMark) {
  auto map = scan_ok("\xEF\xBB\xBF{\"a\": 1}");
  EXPECT_EQ(value_at(map, "/a"), std::pair(1, 7));
}

TEST(JsonSourceMap, SyntaxErrorsCarryLineAndColumn) {
  struct Case {
    std::string text;
    int line, column;
    std::string message_part;
  };
  for (const auto& c : std::vector<Case>{
           {"", 1, 1, "empty document"},
           {"{\"a\": 1,}", 1, 9, "trailing comma"},
           {"[1, 2,]", 1, 7, "trailing comma"},
           {"{\"a\" 1}", 1, 6, "expected ':'"},
           {"{\"a\": 1\n \"b\": 2}", 2, 2, "expected ',' or '}'"},
           {"{'a': 1}", 1, 2, "double quotes"},
           {"[1 2]", 1, 4, "expected ',' or ']'"},
           {"{\"a\": tru}", 1, 7, "invalid literal"},
           {"{\"a\": 01}", 1, 7, "leading zero"},
           {"{\"a\": 1.}", 1, 9, "expected a digit"},
           {"{\"a\": -}", 1, 8, "expected a digit"},
           {"{\"a\": \"x\n\"}", 1, 9, "control character"},
           {"{\"a\": \"\\q\"}", 1, 8, "invalid escape"},
           {"{\"a\": \"\\u12G4\"}", 1, 12, "four hex digits"},
           {"{\"a\": \"\\udc00\"}", 1, 8, "low surrogate"},
           {"{\"a\": \"\\ud800x\"}", 1, 8, "high surrogate"},
           {"{\"a\": \"\xC3\"}", 1, 8, "invalid UTF-8"},
           {"{\"a\": \"\xC0\xAF\"}", 1, 8, "invalid UTF-8"},
           {"{\"a\": \"\xED\xA0\x80\"}", 1, 8, "invalid UTF-8"},
           {"{\"a\": \"abc", 1, 7, "unterminated string"},
           {"{\"a\": [1,\n 2", 1, 7, "inside the array"},
           {"{\n\"a\": 1", 1, 1, "inside the object"},
           {"{} x", 1, 4, "after the end"},
           {"// comment\n{}", 1, 1, "expected a value"},
           {"{\"a\": NaN}", 1, 7, "expected a value"},
       }) {
    auto e = scan_bad(c.text);
    EXPECT_EQ(std::pair(e.pos.line, e.pos.column), std::pair(c.line, c.column)) << c.text;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.text << " -> " << e.message;
  }
}

TEST(JsonSourceMap, RejectsNestingBeyondTheDepthLimitWithoutCrashing) {
  std::string deep(100000, '[');
  auto e = scan_bad(deep);
  EXPECT_NE(e.message.find("nesting deeper"), std::string::npos);
  EXPECT_EQ(e.pos.column, JsonSourceMap::kMaxDepth + 1);
  std::string ok = std::string(JsonSourceMap::kMaxDepth, '[') + std::string(JsonSourceMap::kMaxDepth, ']');
  EXPECT_TRUE(JsonSourceMap::scan(ok));
}

TEST(JsonSourceMap, AcceptsEveryScalarForm) {
  auto map = scan_ok(R"([0, -0, 1.5e10, -2E-3, 3e+2, true, false, null, "", "\/\b\f\n\r\t\\"])");
  EXPECT_EQ(map.size(), 11u);
}

TEST(JsonPointerToken, EscapesTildeAndSlash) {
  EXPECT_EQ(json_pointer_token("a~b/c"), "a~0b~1c");
  EXPECT_EQ(json_pointer_token("plain"), "plain");
}

TEST(PositionAtOffset, CountsLinesAndCodePoints) {
  std::string text = "ab\n\xC3\xA9x";
  EXPECT_EQ(position_at_offset(text, 0).column, 1);
  EXPECT_EQ(position_at_offset(text, 3).line, 2);
  EXPECT_EQ(position_at_offset(text, 5).column, 2);
  EXPECT_EQ(position_at_offset(text, 999).offset, text.size());
}

}  // namespace
}  // namespace vgpu
