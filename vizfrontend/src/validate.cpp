#include "validate.h"

#include <charconv>
#include <fmt/format.h>

#include "vgpu/contract/node_files.h"

namespace vgpu::viz {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Decimal without sign or leading zero; nullopt-like failure through the bool.
bool parse_decimal(std::string_view s, std::uint64_t max, std::uint64_t& out) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
  for (const char c : s) {
    if (!is_digit(c)) return false;
  }
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size() && out <= max;
}

// Shows a hostile value without letting it mangle the message (newlines, escapes).
std::string shown(std::string_view s) { return "'" + printable_label(s.substr(0, 64)) + "'"; }

}  // namespace

Result<std::uint32_t> parse_job_id(std::string_view text) {
  // The contract's one rule (node_files.h), with the message this tool's callers print.
  if (auto job = contract::parse_job_id(text)) return *job;
  return fail(ErrorCode::invalid_argument,
              fmt::format("job id {}: not a decimal number in 1..4294967295", shown(text)));
}

Result<Geometry> parse_geometry(std::string_view text) {
  const auto x = text.find('x');
  std::uint64_t w = 0;
  std::uint64_t h = 0;
  if (x == std::string_view::npos || !parse_decimal(text.substr(0, x), 16384, w) ||
      !parse_decimal(text.substr(x + 1), 16384, h) || w < 64 || h < 64) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("geometry {}: expected WxH with each side in 64..16384", shown(text)));
  }
  return Geometry{static_cast<unsigned>(w), static_cast<unsigned>(h)};
}

Result<std::string> check_name(std::string_view what, std::string_view text) {
  bool ok = !text.empty() && text.size() <= 64 && is_alnum(text[0]);
  for (const char c : text) {
    ok = ok && (is_alnum(c) || c == '.' || c == '_' || c == '-');
  }
  if (!ok) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("{} {}: must be 1-64 characters of [A-Za-z0-9._-] starting with a "
                            "letter or digit",
                            what, shown(text)));
  }
  return std::string(text);
}

Result<std::string> check_cpuset(std::string_view text) {
  auto bad = [&] {
    return fail(ErrorCode::invalid_argument, fmt::format("cpuset {}: expected a list like 0-3,8", shown(text)));
  };
  if (text.empty() || text.size() > 256) return bad();
  std::size_t pos = 0;
  long long last = -1;
  while (pos <= text.size()) {
    const auto comma = std::min(text.find(',', pos), text.size());
    const auto item = text.substr(pos, comma - pos);
    const auto dash = item.find('-');
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_decimal(item, 4095, lo)) return bad();
      hi = lo;
    } else {
      const auto a = item.substr(0, dash);
      const auto b = item.substr(dash + 1);
      if (!parse_decimal(a, 4095, lo) || !parse_decimal(b, 4095, hi) || hi <= lo) return bad();
    }
    if (static_cast<long long>(lo) <= last) return bad();
    last = static_cast<long long>(hi);
    pos = comma + 1;
  }
  if (text.back() == ',') return bad();
  return std::string(text);
}

Result<std::string> check_pci_address(std::string_view text) {
  // dddd:bb:ss.f
  static constexpr std::string_view shape = "hhhh:hh:hh.h";
  bool ok = text.size() == shape.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) {
    ok = shape[i] == 'h' ? is_lower_hex(text[i]) : text[i] == shape[i];
  }
  ok = ok && text[11] <= '7';
  if (!ok) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("PCI address {}: expected dddd:bb:ss.f in lower-case hex", shown(text)));
  }
  return std::string(text);
}

Result<std::string> check_uuid(std::string_view text) {
  static constexpr std::string_view shape = "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh";
  bool ok = text.size() == shape.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) {
    ok = shape[i] == 'h' ? is_lower_hex(text[i]) : text[i] == shape[i];
  }
  if (!ok) {
    return fail(ErrorCode::invalid_argument, fmt::format("UUID {}: not a canonical lower-case UUID", shown(text)));
  }
  return std::string(text);
}

std::string printable_label(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 128)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

std::string domain_name(std::uint32_t job_id) { return fmt::format("{}{}", kDomainPrefix, job_id); }

Result<std::uint32_t> job_of_domain(std::string_view name) {
  if (!name.starts_with(kDomainPrefix)) {
    return fail(ErrorCode::invalid_argument, fmt::format("domain {}: not a viz session", shown(name)));
  }
  return within(parse_job_id(name.substr(kDomainPrefix.size())), fmt::format("domain {}", shown(name)));
}

}  // namespace vgpu::viz
