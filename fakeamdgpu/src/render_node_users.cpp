#include "render_node_users.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

namespace vgpu::fake {

bool render_nodes_in_use(const std::string& dev_root, const std::vector<int>& minors, const std::string& proc) {
  std::set<std::string> paths;
  for (int m : minors) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(fmt::format("{}/dev/dri/renderD{}", dev_root, m), ec);
    if (!ec) paths.insert(p.string());
  }
  std::error_code ec;
  for (const auto& pid : std::filesystem::directory_iterator(proc, ec)) {
    const auto name = pid.path().filename().string();
    if (name.empty() || !std::ranges::all_of(name, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(pid.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      auto target = std::filesystem::read_symlink(fd.path(), link_ec);
      if (!link_ec && paths.contains(target.string())) return true;
    }
  }
  return false;
}

}  // namespace vgpu::fake
