// Slurm hostlist expressions as admins write them in slurm.conf: "n[1-3],gpu07", "gpu[01-16]",
// "rack[1-2]-n[01-04]". Parsed and matched without expanding, so "n[1-99999]" costs nothing.
// Zero padding follows Slurm: a range's width is the width of its low bound as written, so
// gpu[01-16] names gpu01..gpu16 (not gpu1), and n[1-10] names n1..n10 (not n01).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu {

class Hostlist {
 public:
  static constexpr std::size_t kMaxLength = 4096;

  static Result<Hostlist> parse(std::string_view text);

  [[nodiscard]] bool matches(std::string_view node_name) const;
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  struct Range {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    int width = 1;
  };
  // One piece of a host pattern: literal text, or a bracketed set of numeric ranges.
  struct Part {
    std::string literal;
    std::vector<Range> ranges;  // non-empty: a bracket group
  };
  using Pattern = std::vector<Part>;

  static Result<Pattern> parse_pattern(std::string_view item);
  static bool match_from(const Pattern& pattern, std::size_t part, std::string_view name, std::size_t pos);

  std::string text_;
  std::vector<Pattern> patterns_;
};

// A node list as Slurm prints it (`Nodes=`, squeue's %N): a hostlist, or, where that does not
// parse, the text taken as one node name. Parsed once, asked many times.
class NodeList {
 public:
  explicit NodeList(std::string text);
  [[nodiscard]] bool contains(std::string_view node) const { return list_ ? list_->matches(node) : text_ == node; }

 private:
  std::string text_;
  std::optional<Hostlist> list_;
};

}  // namespace vgpu
