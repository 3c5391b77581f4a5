// Splits text on a separator into views of it; empty fields are kept ("a,,b" -> a, "", b).
#pragma once

#include <string_view>
#include <vector>

namespace vgpu {

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

}  // namespace vgpu
