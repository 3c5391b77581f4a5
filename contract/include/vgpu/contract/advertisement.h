// advertisement.json: what the node planner says this node can place right now. Written atomically
// (tmp + rename) by the planner; read by the plugin at every slurmd registration.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::contract {

inline constexpr std::string_view kAdvertisementFormat = "slurm-vgpu-advertisement";
inline constexpr std::uint64_t kAdvertisementVersion = 1;

struct Advertisement {
  std::string node;
  std::uint64_t generation = 0;
  std::map<std::string, std::uint64_t, std::less<>> counts;  // profile -> placeable count
};

// The one writer (the planner; a type it lists at 0 is one slurmd must report at 0, see
// docs/slurm.md) and the one strict reader (the plugin, the planner itself). `expected_node`
// guards against a file copied from another node's directory.
std::string render_advertisement(const Advertisement& advertisement);
Result<Advertisement> parse_advertisement(std::string_view text, std::string_view expected_node);

}  // namespace vgpu::contract
