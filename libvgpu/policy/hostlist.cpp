#include "vgpu/policy/policy_hostlist.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace vgpu {
namespace {

constexpr std::size_t kMaxDigits = 9;  // keeps every bound far from integer overflow

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '_' || c == '.';
}

std::string show_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02X}", u);
}

// Splits at commas outside brackets; brackets are checked by the pattern parser.
std::vector<std::string_view> split_items(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth <= 0) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  items.push_back(text.substr(start));
  return items;
}

Result<std::uint64_t> parse_bound(std::string_view digits, std::string_view range) {
  if (digits.empty() || digits.size() > kMaxDigits || !std::ranges::all_of(digits, [](char c) { return is_digit(c); }))
    return fail(ErrorCode::invalid_argument,
                fmt::format("range '{}': bounds must be numbers of 1 to {} digits", range, kMaxDigits));
  std::uint64_t value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

}  // namespace

Result<Hostlist::Pattern> Hostlist::parse_pattern(std::string_view item) {
  Pattern pattern;
  std::string literal;
  for (std::size_t i = 0; i < item.size(); ++i) {
    char c = item[i];
    if (c == ']') return fail(ErrorCode::invalid_argument, "']' without a matching '['");
    if (c != '[') {
      if (!is_host_char(c))
        return fail(ErrorCode::invalid_argument,
                    fmt::format("{} is not allowed in a host name (use letters, digits, '-', '_', "
                                "'.')",
                                show_char(c)));
      literal += c;
      continue;
    }
    auto close = item.find_first_of("[]", i + 1);
    if (close == std::string_view::npos || item[close] != ']')
      return fail(ErrorCode::invalid_argument, "'[' without a matching ']'");
    std::string_view body = item.substr(i + 1, close - i - 1);
    if (body.empty()) return fail(ErrorCode::invalid_argument, "empty brackets '[]'");
    if (!literal.empty()) pattern.push_back(Part{std::move(literal), {}});
    literal.clear();
    Part group;
    for (std::string_view range : split_items(body)) {
      if (range.empty()) return fail(ErrorCode::invalid_argument, fmt::format("empty range in '[{}]'", body));
      auto dash = range.find('-');
      std::string_view lo_text = range.substr(0, dash);
      std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      auto lo = parse_bound(lo_text, range);
      if (!lo) return std::unexpected(lo.error());
      auto hi = parse_bound(hi_text, range);
      if (!hi) return std::unexpected(hi.error());
      if (*hi < *lo) return fail(ErrorCode::invalid_argument, fmt::format("range '{}' runs backwards", range));
      group.ranges.push_back(Range{*lo, *hi, static_cast<int>(lo_text.size())});
    }
    pattern.push_back(std::move(group));
    i = close;
  }
  if (!literal.empty()) pattern.push_back(Part{std::move(literal), {}});
  return pattern;
}

Result<Hostlist> Hostlist::parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return fail(ErrorCode::invalid_argument, fmt::format("hostlist '{}': {}", text, why));
  };
  if (text.empty()) return bad("empty");
  if (text.size() > kMaxLength) return bad(fmt::format("longer than {} characters", kMaxLength));
  Hostlist list;
  list.text_ = std::string(text);
  for (std::string_view item : split_items(text)) {
    if (item.empty()) return bad("empty host name between commas");
    auto pattern = parse_pattern(item);
    if (!pattern)  // name the item only when there are several
      return bad(item == text ? pattern.error().message : fmt::format("'{}': {}", item, pattern.error().message));
    list.patterns_.push_back(std::move(*pattern));
  }
  return list;
}

bool Hostlist::match_from(const Pattern& pattern, std::size_t part, std::string_view name, std::size_t pos) {
  if (part == pattern.size()) return pos == name.size();
  const Part& p = pattern[part];
  if (p.ranges.empty()) {
    return name.substr(pos).starts_with(p.literal) && match_from(pattern, part + 1, name, pos + p.literal.size());
  }
  // A bracket group consumes a run of digits; try each length, since a following group or
  // literal digit may need the rest ("n[1-2]0" matches "n10").
  std::size_t run = 0;
  while (pos + run < name.size() && run < kMaxDigits + 1 && is_digit(name[pos + run])) ++run;
  for (std::size_t len = 1; len <= run; ++len) {
    std::string_view digits = name.substr(pos, len);
    std::uint64_t value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    for (const Range& r : p.ranges) {
      if (value < r.lo || value > r.hi) continue;
      if (fmt::format("{:0{}}", value, r.width) != digits) continue;  // padding must be exact
      if (match_from(pattern, part + 1, name, pos + len)) return true;
    }
  }
  return false;
}

bool Hostlist::matches(std::string_view node_name) const {
  for (const auto& pattern : patterns_)
    if (match_from(pattern, 0, node_name, 0)) return true;
  return false;
}

NodeList::NodeList(std::string text) : text_(std::move(text)) {
  if (auto h = Hostlist::parse(text_)) list_ = std::move(*h);
}

}  // namespace vgpu
