// Where each value of a JSON document sits in its text, so that error messages about a value can
// say "policy.json:14:23". nlohmann_json 3.11 parses documents but keeps no positions, so this
// scanner reads the same text once more, checks the JSON grammar strictly (RFC 8259: no comments,
// no trailing commas, valid UTF-8) and records the line:column of every value and object key,
// keyed by JSON pointer (RFC 6901). It is used for messages only; nlohmann does the real parse.
// It also refuses a number beyond a double's range (1e400, a 400-digit integer), which nlohmann
// refuses too but without saying where.
//
// Positions: lines and columns start at 1; a column counts Unicode code points (not bytes), so a
// message points at the right character in an editor; "\r\n" and "\n" both end a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
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
  // Values in the document, each occurrence of a repeated key counted.
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }

 private:
  friend class JsonScanner;
  // One value, in document order: the root first. A container's members or elements, in order,
  // are children_[first_child, first_child + child_count); a member's key is
  // keys_.substr(key_offset, key_size). Flat arrays rather than a map keyed by pointer, so a
  // million-element list costs a million small records written in order, not a million hashed
  // strings; the few lookups (one per error reported) walk the pointer down from the root.
  // 32-bit offsets: scan() refuses a text of 4 GiB or more.
  struct Node {
    JsonLocation location;
    std::uint32_t key_offset = 0;
    std::uint32_t key_size = 0;
    std::uint32_t first_child = 0;
    std::uint32_t child_count = 0;
    bool is_array = false;
  };
  // The node `pointer` names (exact) or, when it names none, the deepest one on its way there;
  // nullptr for an empty map or a pointer not starting with '/'.
  struct Walk {
    const Node* node = nullptr;
    bool exact = false;
  };
  [[nodiscard]] Walk walk(std::string_view pointer) const;
  [[nodiscard]] const Node* child(const Node& parent, std::string_view token) const;
  [[nodiscard]] std::string_view key_of(const Node& node) const {
    return std::string_view(keys_).substr(node.key_offset, node.key_size);
  }

  std::vector<Node> nodes_;
  std::vector<std::uint32_t> children_;
  std::string keys_;
  std::vector<JsonDuplicateKey> duplicates_;
};

// One reference token of a JSON pointer: '~' -> "~0", '/' -> "~1".
std::string json_pointer_token(std::string_view key);

// The line:column of a byte offset (clamped to the text), counted as JsonSourceMap counts.
SourcePos position_at_offset(std::string_view text, std::size_t offset);

}  // namespace vgpu
