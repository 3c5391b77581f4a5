// Names that travel between files, slurm.conf and Slurm's GRES strings. Slurm splits GRES strings
// on ':' and ',', and node names become path components, so both are held to a small alphabet.
#pragma once

#include <cstddef>
#include <string>
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

// A free-text value that a record keeps (a job's user in the ledger and its history): what every
// strict reader of our records accepts, so a writer that checks it never writes a record its own
// reader then refuses (a refused ledger is set aside and rebuilt: every idle instance quarantined).
// At most 256 bytes of valid UTF-8 with no control character; empty is allowed (no user).
inline constexpr std::size_t kRecordTextMax = 256;
bool is_valid_record_text(std::string_view text);
// Why `text` breaks that rule ("" when it keeps it), e.g. "contains a control character (0x09)".
std::string record_text_problem(std::string_view text);

}  // namespace vgpu::contract
