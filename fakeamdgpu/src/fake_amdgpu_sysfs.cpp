#include "fake_amdgpu_sysfs.h"

#include <fmt/format.h>

namespace vgpu::fake {

using Kind = FakeAmdgpuDriver::Kind;

Result<std::string> FakeAmdgpuSysfs::read(std::string_view path) const {
  auto e = driver_.stat(driver_.resolve(path));
  if (e.kind != Kind::file) return fail(ErrorCode::not_found, fmt::format("sysfs /{}: cannot read", path));
  std::string s = e.content;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::expected<void, int> FakeAmdgpuSysfs::write(std::string_view path, std::string_view value) {
  return driver_.write(path, value);
}

Result<std::vector<std::string>> FakeAmdgpuSysfs::list(std::string_view dir) const {
  const std::string real = driver_.resolve(dir);
  if (driver_.stat(real).kind != Kind::dir)
    return fail(ErrorCode::not_found, fmt::format("sysfs /{}: no such directory", dir));
  return driver_.list(real);
}

bool FakeAmdgpuSysfs::exists(std::string_view path) const {
  return driver_.stat(driver_.resolve(path)).kind != Kind::missing;
}

Result<std::string> FakeAmdgpuSysfs::link_name(std::string_view path) const {
  auto e = driver_.stat(path);
  if (e.kind != Kind::link) return fail(ErrorCode::not_found, fmt::format("sysfs /{}: not a link", path));
  return e.content.substr(e.content.rfind('/') + 1);
}

}  // namespace vgpu::fake
