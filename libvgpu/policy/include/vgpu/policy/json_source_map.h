// Where each value of a JSON document sits in its text, so that error messages about a value can
// say "policy.json:14:23". nlohmann_json 3.11 parses documents but keeps no positions, so this
// scanner reads the same text once more, checks the JSON grammar strictly (RFC 8259: no comments,
// no trailing commas, valid UTF-8) and records the line:column of every value and object key,
// keyed by JSON pointer (RFC 6901). It is used for messages only; nlohmann does the real parse.
//
// Positions: lines and columns start at 1; a column counts Unicode code points (not bytes), so a
// message points at the right character in an editor; "\r\n" and "\n" both end a line.
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vgpu {

struct SourcePos {
  int line = 0;  // 0: unknown
  int column = 0;
  std::size_t offset = 0;  // byte offset into the text
  [[nodiscard]] bool known() const { return line > 0; }
  bool operator==(const SourcePos&) const = default;
};

struct JsonLocation {
  SourcePos key;    // the member's key (its opening quote); unknown for the root and array elements
  SourcePos value;  // the first character of the value
};

// An object that names the same key twice: nlohmann keeps the last silently, a strict reader must not.
struct JsonDuplicateKey {
  std::string pointer;  // pointer of the member
  SourcePos first;      // key position of the first occurrence
  SourcePos again;      // key position of the repeat
};

struct JsonSyntaxError {
  SourcePos pos;
  std::string message;  // "expected ',' or '}' after an object member, got ']'"
};

class JsonSourceMap {
 public:
  static constexpr int kMaxDepth = 256;

  static std::expected<JsonSourceMap, JsonSyntaxError> scan(std::string_view text);

  // Exact lookup; nullptr when the pointer names no value of the document.
  [[nodiscard]] const JsonLocation* find(std::string_view pointer) const;
  // The value's position, else that of its nearest ancestor that exists (e.g. for a missing
  // field, the object that should have held it).
  [[nodiscard]] SourcePos value_position(std::string_view pointer) const;
  // The key's position for an object member, else value_position().
  [[nodiscard]] SourcePos key_position(std::string_view pointer) const;

  [[nodiscard]] const std::vector<JsonDuplicateKey>& duplicate_keys() const { return duplicates_; }
  [[nodiscard]] std::size_t size() const { return locations_.size(); }

 private:
  friend class JsonScanner;
  std::unordered_map<std::string, JsonLocation> locations_;
  std::vector<JsonDuplicateKey> duplicates_;
};

// One reference token of a JSON pointer: '~' -> "~0", '/' -> "~1".
std::string json_pointer_token(std::string_view key);

// The line:column of a byte offset (clamped to the text), counted as JsonSourceMap counts.
SourcePos position_at_offset(std::string_view text, std::size_t offset);

}  // namespace vgpu
