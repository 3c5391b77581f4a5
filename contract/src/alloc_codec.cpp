#include "vgpu/contract/alloc_codec.h"

#include <algorithm>

#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {

std::vector<bool> encode_type_bits(std::string_view type) {
  std::vector<bool> bits(type.size() * 8, false);
  for (std::size_t i = 0; i < type.size(); ++i) {
    const auto byte = static_cast<unsigned char>(type[i]);
    for (std::size_t b = 0; b < 8; ++b) bits[i * 8 + b] = ((byte >> b) & 1U) != 0;
  }
  return bits;
}

Result<std::string> decode_type_bits(const std::vector<bool>& bits) {
  if (bits.empty() || bits.size() % 8 != 0) {
    return fail(ErrorCode::corrupt, "type bitmap of " + std::to_string(bits.size()) + " bits is not whole bytes");
  }
  std::string type(bits.size() / 8, '\0');
  for (std::size_t i = 0; i < type.size(); ++i) {
    unsigned byte = 0;
    for (std::size_t b = 0; b < 8; ++b) byte |= (bits[i * 8 + b] ? 1U : 0U) << b;
    type[i] = static_cast<char>(byte);
  }
  if (!is_valid_type_name(type) && !is_reserved_type(type) && type != kUntypedAlloc) {
    return fail(ErrorCode::corrupt, "type bitmap does not spell a profile name");
  }
  return type;
}

std::string append_alloc_item(std::string_view previous, std::string_view type, std::uint64_t count) {
  std::string out(previous);
  if (!out.empty()) out += ',';
  out += type;
  out += ':';
  out += std::to_string(count);
  return out;
}

Result<std::vector<AllocItem>> parse_alloc(std::string_view text) {
  std::vector<AllocItem> items;
  if (text.empty()) return items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view entry = text.substr(start, end - start);
    const std::size_t colon = entry.find(':');
    auto bad = [&](std::string_view why) {
      return fail(ErrorCode::invalid_argument, "VGPU_ALLOC entry '" + printable(entry) + "': " + std::string(why));
    };
    if (colon == std::string_view::npos || entry.find(':', colon + 1) != std::string_view::npos)
      return bad("expected <type>:<count>");
    const std::string_view type = entry.substr(0, colon), count = entry.substr(colon + 1);
    if (!is_valid_type_name(type) && !is_reserved_type(type) && type != kUntypedAlloc)
      return bad("type is not a vgpu type name (" + std::string(type_name_rule()) + ")");
    int n = 0;
    bool digits = !count.empty() && count.size() <= 4;
    for (char c : count) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) n = n * 10 + (c - '0');
    }
    if (!digits || n < 1 || n > 4096) return bad("count must be a whole number from 1 to 4096");
    // The plugin writes each type once with its count; a repeat is not summed, since a sum
    // would let a forged value pass a per-type check with a total no check saw.
    if (std::ranges::any_of(items, [&](const AllocItem& i) { return i.type == type; }))
      return bad("type " + std::string(type) + " is named twice (each type once, with its total)");
    items.push_back({std::string(type), n});
    start = end + 1;
  }
  return items;
}

}  // namespace vgpu::contract
