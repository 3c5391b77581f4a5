#include "alloc_codec.h"

#include "names.h"

namespace vgpu::gres {

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
  if (!is_valid_profile_name(type) && !is_reserved_type(type) && type != kUntypedAlloc) {
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

}  // namespace vgpu::gres
