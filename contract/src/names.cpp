#include "vgpu/contract/names.h"

#include <cstdio>

namespace vgpu::contract {
namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool all_of_alphabet(std::string_view s, std::string_view extra) {
  for (char c : s) {
    if (!is_alnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

bool is_reserved_type(std::string_view name) { return name == kFreeType || name == kNeverType; }

bool is_valid_type_name(std::string_view name) {
  return !name.empty() && name.size() <= 32 && is_alnum(name.front()) && all_of_alphabet(name, "._+-") &&
         !is_reserved_type(name);
}

std::string_view type_name_rule() {
  return "1 to 32 of [A-Za-z0-9._+-] starting with a letter or a digit, not \"free\" or \"never\"";
}

bool is_valid_node_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && is_alnum(name.front()) && all_of_alphabet(name, "._-");
}

std::string_view node_name_rule() { return "1 to 64 of [A-Za-z0-9._-] starting with a letter or a digit"; }

namespace {

// The length of the UTF-8 sequence starting at text[i], or 0 when it is not well formed
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC)
    n = 3;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string record_text_problem(std::string_view text) {
  if (text.size() > kRecordTextMax) return "longer than " + std::to_string(kRecordTextMax) + " bytes";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return std::string("contains a control character (") + hex + ")";
    }
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return "is not valid UTF-8 (at byte " + std::to_string(i) + ")";
    i += n;
  }
  return {};
}

bool is_valid_record_text(std::string_view text) { return record_text_problem(text).empty(); }

}  // namespace vgpu::contract
