#include "names.h"

namespace vgpu::gres {
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

bool is_valid_profile_name(std::string_view name) {
  return !name.empty() && name.size() <= 32 && is_alnum(name.front()) && all_of_alphabet(name, "._+-") &&
         !is_reserved_type(name);
}

bool is_valid_node_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && is_alnum(name.front()) && all_of_alphabet(name, "._-");
}

}  // namespace vgpu::gres
