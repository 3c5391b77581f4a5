// Strict JSON reading for the node-side file contract: the files are written by our own tools, so
// anything unexpected (duplicate or unknown keys, wrong types) means a bug or a torn write and must
// be reported, not guessed around.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vgpu/error.h"

namespace vgpu::gres {

// Parses one document. Refuses duplicate object keys: nlohmann keeps the last one silently, which
// would let a stray field shadow the real one.
Result<nlohmann::json> parse_strict_json(std::string_view text);

// `obj` must be an object holding exactly `keys`.
Result<void> require_exact_keys(const nlohmann::json& obj, std::initializer_list<std::string_view> keys);

Result<std::uint64_t> require_unsigned(const nlohmann::json& obj, std::string_view key);
Result<std::string> require_string(const nlohmann::json& obj, std::string_view key);

// Checks "format" and "version" so a file of another kind or a future layout is refused by name.
Result<void> require_header(const nlohmann::json& doc, std::string_view format, std::uint64_t version);

}  // namespace vgpu::gres
