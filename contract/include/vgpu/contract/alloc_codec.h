// Carrying the allocated GRES type from slurmctld to the Prolog/Epilog environment.
// Slurm 22.05 packs only counts and per-node bitmaps for epilog info, never the type name, so the
// name itself is spelled into the bitmap: byte i of the name occupies bits [8i, 8i+8), LSB first.
// Unlike an index into a fixed table, this needs no table kept identical in slurmctld and slurmd.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::contract {

// Type name used in VGPU_ALLOC when a request carried no type (job_submit refuses those, but a
// job submitted before the filter was installed may still run).
inline constexpr std::string_view kUntypedAlloc = "any";

std::vector<bool> encode_type_bits(std::string_view type);
Result<std::string> decode_type_bits(const std::vector<bool>& bits);

// One VGPU_ALLOC item per typed allocation on this node: "1g.10gb:2,3g.40gb:1".
std::string append_alloc_item(std::string_view previous, std::string_view type, std::uint64_t count);

struct AllocItem {
  std::string type;  // a type name, a reserved type or kUntypedAlloc
  int count = 0;     // 1..4096
  bool operator==(const AllocItem&) const = default;
};
// The strict reader of VGPU_ALLOC, the inverse of append_alloc_item. "" is no items.
Result<std::vector<AllocItem>> parse_alloc(std::string_view text);

}  // namespace vgpu::contract
