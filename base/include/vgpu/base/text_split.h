// Splitting and trimming text into views of it.
#pragma once

#include <string_view>
#include <vector>

namespace vgpu {

// Splits on a separator; empty fields are kept ("a,,b" -> a, "", b).
inline std::vector<std::string_view> split_view(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

// Without leading and trailing blanks (space, tab, CR, LF).
inline std::string_view trim_view(std::string_view text) {
  constexpr std::string_view blanks = " \t\r\n";
  const auto first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

}  // namespace vgpu
