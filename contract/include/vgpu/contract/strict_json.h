// Strict JSON reading, for every file the project reads (the node's contract files, the ledger,
// the catalog, policy files, viz configuration and records, NVML fixtures): anything unexpected
// (duplicate or unknown keys, missing ones, wrong types) means a bug, a torn write or a typo and is
// reported, not guessed around. The wording of an object's key problems is the same everywhere:
//   <path of the key>: unknown field (known here: gpu, profile, placement)
//   <path of the key>: required field missing
// with the path in the reader's own style (the policy adds file, line and column).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/base/error.h"

namespace vgpu::contract {

// Parses one document. Refuses duplicate object keys: nlohmann keeps the last one silently, which
// would let a stray field shadow the real one.
Result<nlohmann::json> parse_strict_json(std::string_view text);

// The messages, without the path. Keys in paths are shown printable (control bytes as '?', at
// most 128 bytes).
std::string unknown_field_message(std::initializer_list<std::string_view> known);
std::string unknown_field_message(const std::vector<std::string>& known);
inline constexpr std::string_view kMissingFieldMessage = "required field missing";
std::string printable(std::string_view text);

struct KeyProblem {
  std::string key;
  std::string message;  // unknown_field_message(...) or kMissingFieldMessage
};
// Every key problem of object `obj` against `required` and `optional` keys, unknown ones first in
// the object's order, then missing ones in `required`'s order; empty when there is none.
std::vector<KeyProblem> key_problems(const nlohmann::json& obj, std::initializer_list<std::string_view> required,
                                     std::initializer_list<std::string_view> optional = {});
// The first of them as a `corrupt` error "<where>.<key>: <message>" ("<key>: ..." when `where` is
// empty); also refuses a non-object.
Result<void> require_keys(const nlohmann::json& obj, std::string_view where,
                          std::initializer_list<std::string_view> required,
                          std::initializer_list<std::string_view> optional = {});
// `obj` must be an object holding exactly `keys` (require_keys with no <where>).
Result<void> require_exact_keys(const nlohmann::json& obj, std::initializer_list<std::string_view> keys);

Result<std::uint64_t> require_unsigned(const nlohmann::json& obj, std::string_view key);
Result<std::string> require_string(const nlohmann::json& obj, std::string_view key);

// Checks "format" and "version" so a file of another kind or a future layout is refused by name.
Result<void> require_header(const nlohmann::json& doc, std::string_view format, std::uint64_t version);

}  // namespace vgpu::contract
