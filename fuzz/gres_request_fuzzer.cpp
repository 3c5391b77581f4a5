// GRES request strings as users, Slurm and the plugin write them: libvgpu's --gres and
// VGPU_ALLOC parsers (vgpu/gres_request.h), and the plugin contract's name checks and VGPU_ALLOC
// codec (contract/: names.h, alloc_codec.h). The whole input is one string.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/names.h"
#include "fuzz_check.h"
#include "vgpu/core/gres_request.h"

namespace {

bool safe_type(std::string_view type) {
  if (type.empty() || type.size() > 64) return false;
  for (char c : type) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_' || c == '+';
    if (!ok) return false;
  }
  return true;
}

std::string alloc_text(const std::vector<vgpu::GresRequest>& requests) {
  std::string out;
  for (const auto& r : requests)
    out = vgpu::contract::append_alloc_item(out, r.type, static_cast<std::uint64_t>(r.count));
  return out;
}

void check_requests(const std::vector<vgpu::GresRequest>& requests) {
  for (const auto& r : requests) {
    FUZZ_CHECK(safe_type(r.type));  // types become file names and environment values
    FUZZ_CHECK(r.count >= 1 && r.count <= 4096);
  }
  // What the plugin writes into VGPU_ALLOC for these parses back to the same requests.
  auto again = vgpu::parse_vgpu_alloc(alloc_text(requests));
  FUZZ_CHECK(again.has_value() && *again == requests);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto gres = vgpu::parse_vgpu_gres(text); gres) {
    check_requests(*gres);
    // Spelled back as a --gres value it parses to the same requests.
    std::string spelled;
    for (const auto& r : *gres) {
      if (!spelled.empty()) spelled += ',';
      spelled += "vgpu:" + r.type + ":" + std::to_string(r.count);
    }
    if (!gres->empty()) {
      auto again = vgpu::parse_vgpu_gres(spelled);
      FUZZ_CHECK(again.has_value() && *again == *gres);
    }
  } else {
    FUZZ_CHECK(!gres.error().message.empty());
  }

  if (auto alloc = vgpu::parse_vgpu_alloc(text); alloc) {
    check_requests(*alloc);
  } else {
    FUZZ_CHECK(!alloc.error().message.empty());
  }

  // Names: a valid profile name is never a reserved type, fits Slurm's GRES syntax (no ':' or
  // ','), and passes libvgpu's type alphabet.
  if (vgpu::contract::is_valid_type_name(text)) {
    FUZZ_CHECK(!vgpu::contract::is_reserved_type(text));
    FUZZ_CHECK(text.find_first_of(":,/") == std::string_view::npos);
    FUZZ_CHECK(safe_type(text));
  }
  if (vgpu::contract::is_valid_node_name(text)) {
    FUZZ_CHECK(text != "." && text != ".." && text.find('/') == std::string_view::npos);
  }

  // The type-name bitmap: encode/decode is lossless, and decode accepts only names.
  const auto bits = vgpu::contract::encode_type_bits(text);
  FUZZ_CHECK(bits.size() == text.size() * 8);
  auto decoded = vgpu::contract::decode_type_bits(bits);
  const bool name_like = vgpu::contract::is_valid_type_name(text) || vgpu::contract::is_reserved_type(text) ||
                         text == vgpu::contract::kUntypedAlloc;
  FUZZ_CHECK(decoded.has_value() == name_like);
  if (decoded) FUZZ_CHECK(*decoded == text);
  // Arbitrary bitmaps (one input bit per bool) never decode to anything but a name.
  std::vector<bool> raw;
  for (std::size_t i = 0; i < size && i < 512; ++i) raw.push_back((data[i] & 1U) != 0);
  if (auto any = vgpu::contract::decode_type_bits(raw); any) {
    FUZZ_CHECK(vgpu::contract::is_valid_type_name(*any) || vgpu::contract::is_reserved_type(*any) ||
               *any == vgpu::contract::kUntypedAlloc);
  }
  return 0;
}
