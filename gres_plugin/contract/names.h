// Names that travel between files, slurm.conf and Slurm's GRES strings. Slurm splits GRES strings
// on ':' and ',', and node names become path components, so both are held to a small alphabet.
#pragma once

#include <string_view>

namespace vgpu::gres {

inline constexpr std::string_view kGresName = "vgpu";
// Padding type that keeps the node's total constant (see docs/slurm.md).
inline constexpr std::string_view kFreeType = "free";
// Permanent zero-count type; without one Slurm ignores a split whose types are all non-zero.
inline constexpr std::string_view kNeverType = "never";

// A MIG-like profile name such as "3g.40gb" or "1g.10gb+me"; never one of the reserved types.
bool is_valid_profile_name(std::string_view name);
bool is_reserved_type(std::string_view name);
// A Slurm NodeName usable as one path component.
bool is_valid_node_name(std::string_view name);

}  // namespace vgpu::gres
