// One row of a strictly parsed CSV file: every error names file:line, the column and the value,
// because a silently skipped or misread row would change every number the simulator reports.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::bench {

inline std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

// Calls `on_line(line_no, line)` for each line of `text` (1-based, line end and a '\r' before it
// removed; a final newline ends the last line rather than starting an empty one). An empty line
// anywhere else is an error naming it. The first error, the reader's or `on_line`'s, stops the walk.
template <class OnLine>
Result<void> for_each_csv_line(std::string_view text, std::string_view path, OnLine&& on_line) {
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (pos >= text.size()) break;
      return fail(ErrorCode::invalid_argument, fmt::format("{}:{}: empty line", path, line_no));
    }
    if (auto ok = on_line(line_no, line); !ok) return ok;
  }
  if (line_no == 0) return fail(ErrorCode::invalid_argument, fmt::format("{}: empty file", path));
  return {};
}

// A data row must have as many fields as the header.
inline Result<void> check_columns(std::string_view path, int line_no, std::size_t got, std::size_t want) {
  if (got == want) return {};
  return fail(ErrorCode::invalid_argument, fmt::format("{}:{}: {} columns, expected {}", path, line_no, got, want));
}

// The whole of a CSV file, or an error naming it.
inline Result<std::string> read_csv_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, fmt::format("{}: cannot open", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

class RowReader {
 public:
  RowReader(std::string_view path, int line, std::span<const std::string_view> header,
            std::span<const std::string_view> fields)
      : path_(path), line_(line), header_(header), fields_(fields) {}

  [[nodiscard]] Error error(std::size_t col, std::string_view why) const {
    return Error{ErrorCode::invalid_argument,
                 fmt::format("{}:{}: column {}: value '{}': {}", path_, line_, header_[col], fields_[col], why)};
  }

  [[nodiscard]] Result<long long> integer(std::size_t col, long long lo, long long hi) const {
    std::string_view v = fields_[col];
    long long out = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc{} || ptr != v.data() + v.size())
      return std::unexpected(error(col, "not an integer"));
    if (out < lo || out > hi) return std::unexpected(error(col, fmt::format("out of range [{}, {}]", lo, hi)));
    return out;
  }

 private:
  std::string_view path_;
  int line_;
  std::span<const std::string_view> header_;
  std::span<const std::string_view> fields_;
};

}  // namespace vgpu::bench
