// A whole file as text, for the policy tests that compare or mutate shipped files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace vgpu::testing {

// Sized read, not istreambuf_iterator, which GCC 12 at -O2 flags as a null dereference (-Werror).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in) << path;
  std::string text(static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

}  // namespace vgpu::testing
