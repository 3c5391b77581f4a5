#include "vgpu/sysfs/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace vgpu {

RootedSysfs::RootedSysfs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string RootedSysfs::full(std::string_view path) const {
  if (root_ == "/") return fmt::format("/{}", path);
  return fmt::format("{}/{}", root_, path);
}

Result<std::string> RootedSysfs::read(std::string_view path) const {
  std::ifstream in(full(path));
  if (!in) return fail(ErrorCode::not_found, fmt::format("sysfs {}: cannot read", full(path)));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::expected<void, int> RootedSysfs::write(std::string_view path, std::string_view value) {
  // One write(2) of the whole value: sysfs store callbacks see exactly one buffer.
  const int fd = ::open(full(path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n < 0) return std::unexpected(err);
  if (static_cast<std::size_t>(n) != value.size()) return std::unexpected(EIO);
  return {};
}

Result<std::vector<std::string>> RootedSysfs::list(std::string_view dir) const {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(full(dir), ec)) {
    names.push_back(e.path().filename().string());
  }
  if (ec) return fail(ErrorCode::not_found, fmt::format("sysfs {}: {}", full(dir), ec.message()));
  std::ranges::sort(names);
  return names;
}

bool RootedSysfs::exists(std::string_view path) const {
  std::error_code ec;
  return std::filesystem::exists(full(path), ec);
}

Result<std::string> RootedSysfs::link_name(std::string_view path) const {
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(full(path), ec);
  if (ec) return fail(ErrorCode::not_found, fmt::format("sysfs {}: {}", full(path), ec.message()));
  return target.filename().string();
}

}  // namespace vgpu
