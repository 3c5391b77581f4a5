// Names that travel between files, slurm.conf and Slurm's GRES strings. Slurm splits GRES strings
// on ':' and ',', and node names become path components, so both are held to a small alphabet.
#pragma once

#include <string_view>

namespace vgpu::contract {

inline constexpr std::string_view kGresName = "vgpu";
// Padding type that keeps the node's total constant (see docs/slurm.md).
inline constexpr std::string_view kFreeType = "free";
// Permanent zero-count type; without one Slurm ignores a split whose types are all non-zero.
inline constexpr std::string_view kNeverType = "never";

// The one alphabet of a vgpu GRES type: a MIG profile ("3g.40gb", "1g.10gb+me"), a class or a viz
// pool ("viz-small") -- what users type after vgpu: and what the advertisement, the job records,
// VGPU_ALLOC and the policy name. 1 to 32 of [A-Za-z0-9._+-], starting with a letter or a digit,
// never one of the reserved types.
bool is_valid_type_name(std::string_view name);
std::string_view type_name_rule();  // that rule in words, for error messages
bool is_reserved_type(std::string_view name);
// A Slurm NodeName usable as one path component: 1 to 64 of [A-Za-z0-9._-], starting with a
// letter or a digit.
bool is_valid_node_name(std::string_view name);
std::string_view node_name_rule();

}  // namespace vgpu::contract
