// Properties over random input: the parser never crashes, every failure says where, the scanner
// agrees with nlohmann on what is JSON, and hostlist ranges match exactly their members.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "vgpu/policy/json_source_map.h"
#include "vgpu/policy/policy.h"

namespace vgpu {
namespace {

int line_count(const std::string& text) { return 1 + static_cast<int>(std::ranges::count(text, '\n')); }

// Mostly JSON punctuation and policy words, so random text reaches deep into the parser.
rc::Gen<std::string> jsonish_text() {
  static const std::vector<std::string> pieces = {"{",
                                                  "}",
                                                  "[",
                                                  "]",
                                                  ",",
                                                  ":",
                                                  " ",
                                                  "\n",
                                                  "\r\n",
                                                  "\"",
                                                  "\\",
                                                  "\\u00e9",
                                                  "\\ud83d",
                                                  "0",
                                                  "1",
                                                  "-",
                                                  ".",
                                                  "e",
                                                  "64",
                                                  "true",
                                                  "null",
                                                  "\"version\"",
                                                  "\"partitions\"",
                                                  "\"p\"",
                                                  "\"profiles\"",
                                                  "\"1g.10gb\"",
                                                  "\"7g.80gb\"",
                                                  "\"nodes\"",
                                                  "\"n[1-3]\"",
                                                  "\"viz_pools\"",
                                                  "\"name\"",
                                                  "\"idle_layout\"",
                                                  "\xC3\xA9",
                                                  "\xFF",
                                                  "\t"};
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(pieces)),
                      [](const std::vector<std::string>& parts) {
                        std::string out;
                        for (const auto& p : parts) out += p;
                        return out;
                      });
}

void expect_positioned_failure_or_success(const std::string& text) {
  auto check = check_policy(text, "r.json");
  RC_ASSERT(check.ok() == check.policy.has_value());
  for (const auto& d : check.diagnostics) {
    RC_ASSERT(d.line >= 1);
    RC_ASSERT(d.line <= line_count(text));
    RC_ASSERT(d.column >= 1);
    RC_ASSERT(d.to_string().starts_with(fmt::format("r.json:{}:{}: ", d.line, d.column)));
  }
}

RC_GTEST_PROP(PolicyProperties, RandomTextNeverCrashesAndEveryErrorHasALine, ()) {
  expect_positioned_failure_or_success(*jsonish_text());
}

RC_GTEST_PROP(PolicyProperties, RandomBytesNeverCrashAndEveryErrorHasALine, ()) {
  expect_positioned_failure_or_success(*rc::gen::arbitrary<std::string>());
}

RC_GTEST_PROP(PolicyProperties, CorruptingTheExampleAnywhereYieldsPositionedErrors, ()) {
  static const std::string example = [] {
    // Sized read, not istreambuf_iterator, which GCC 12 at -O2 flags as a null dereference (-Werror).
    std::ifstream in(std::string(VGPU_SOURCE_DIR) + "/examples/policy.json", std::ios::binary | std::ios::ate);
    std::string text(static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
    in.seekg(0);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    return text;
  }();
  RC_PRE(!example.empty());
  auto at = *rc::gen::inRange<std::size_t>(0, example.size());
  auto replacement = *rc::gen::elementOf(
      std::vector<std::string>{"", "}", "{", "\"", ",", "0", "-1", "x", "]", "\"9g.99gb\"", "null", "\\", "\n"});
  std::string text = example;
  text.replace(at, *rc::gen::inRange<std::size_t>(0, 4), replacement);
  expect_positioned_failure_or_success(text);
}

RC_GTEST_PROP(JsonSourceMapProperties, AcceptsExactlyWhatNlohmannAccepts, ()) {
  std::string text = *jsonish_text();
  bool scanner_ok = JsonSourceMap::scan(text).has_value();
  bool nlohmann_ok = nlohmann::json::accept(text);
  RC_ASSERT(scanner_ok == nlohmann_ok);
}

// A random document: scalars, strings with escapes and non-ASCII text, nested arrays and objects.
nlohmann::json random_json(int depth) {
  static const std::vector<std::string> strings = {
      "",    "a",  "version", "\xC3\xA9t\xC3\xA9", "\xF0\x9F\x98\x80", "q\"uote", "back\\slash", "line\nbreak", "tab\t",
      "a/b", "~0", "n[1-3]"};
  switch (*rc::gen::inRange(0, depth > 0 ? 7 : 5)) {
    case 0: return nullptr;
    case 1: return *rc::gen::arbitrary<bool>();
    case 2: return *rc::gen::arbitrary<int>();
    case 3: return *rc::gen::elementOf(strings);
    case 4: return *rc::gen::inRange(-1000, 1000) / 8.0;
    case 5: {
      auto array = nlohmann::json::array();
      for (int n = *rc::gen::inRange(0, 4); n > 0; --n) array.push_back(random_json(depth - 1));
      return array;
    }
    default: {
      auto object = nlohmann::json::object();
      for (int n = *rc::gen::inRange(0, 4); n > 0; --n) object[*rc::gen::elementOf(strings)] = random_json(depth - 1);
      return object;
    }
  }
}

RC_GTEST_PROP(JsonSourceMapProperties, EveryValueOfAValidDocumentIsMappedToItsFirstCharacter, ()) {
  std::string text = random_json(4).dump(*rc::gen::elementOf(std::vector<int>{-1, 0, 2}));
  if (*rc::gen::arbitrary<bool>()) {  // the same document with Windows line ends
    std::string crlf;
    for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    text = crlf;
  }
  auto doc = nlohmann::json::parse(text);
  auto map = JsonSourceMap::scan(text);
  RC_ASSERT(map.has_value());
  const auto flat = doc.flatten();  // named: items() only refers to the json it iterates
  for (const auto& item : flat.items()) {
    // flatten() names every leaf and empty container; each must be mapped to where it begins.
    const std::string& pointer = item.key();
    const auto* loc = map->find(pointer);
    RC_ASSERT(loc != nullptr);
    const auto& value = doc.at(nlohmann::json::json_pointer(pointer));
    char at = text[loc->value.offset];
    if (value.is_number()) RC_ASSERT(at == '-' || (at >= '0' && at <= '9'));
    else
      RC_ASSERT(at == value.dump()[0]);
    RC_ASSERT(position_at_offset(text, loc->value.offset) == loc->value);
  }
}

RC_GTEST_PROP(HostlistProperties, ARangeMatchesExactlyItsZeroPaddedMembers, ()) {
  auto lo = *rc::gen::inRange<unsigned>(0, 2000);
  auto hi = lo + *rc::gen::inRange<unsigned>(0, 500);
  auto width = *rc::gen::inRange<int>(1, 6);
  auto list = Hostlist::parse(fmt::format("gpu[{:0{}}-{}]", lo, width, hi));
  RC_ASSERT(list.has_value());
  int lo_width = std::max<int>(width, static_cast<int>(std::to_string(lo).size()));
  auto v = *rc::gen::inRange<unsigned>(0, 3000);
  bool in = v >= lo && v <= hi;
  RC_ASSERT(list->matches(fmt::format("gpu{:0{}}", v, lo_width)) == in);
  // Unpadded spellings of padded ranges never match (unless the padding is a no-op).
  std::string plain = fmt::format("gpu{}", v);
  if (plain != fmt::format("gpu{:0{}}", v, lo_width)) RC_ASSERT(!list->matches(plain));
}

}  // namespace
}  // namespace vgpu
