#include "vgpu/contract/names.h"

namespace vgpu::contract {
namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

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

}  // namespace vgpu::contract
