#include "web_root.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string>

#include "file_util.h"
#include "viz_page.h"

namespace vgpu::viz {
namespace {

// Makes `link` a symbolic link to `target`, replacing whatever link was there.
Result<void> link_to(const std::string& target, const std::string& link) {
  char current[4096];
  const ssize_t n = ::readlink(link.c_str(), current, sizeof current - 1);
  if (n >= 0 && std::string(current, static_cast<std::size_t>(n)) == target) return {};
  if (n >= 0 || errno == EINVAL) {
    if (::unlink(link.c_str()) != 0) {
      return fail(ErrorCode::io, fmt::format("web root: cannot replace {}: {}", link, std::strerror(errno)));
    }
  }
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    return fail(ErrorCode::io, fmt::format("web root: cannot link {} -> {}: {}", link, target, std::strerror(errno)));
  }
  return {};
}

}  // namespace

Result<void> prepare_web_root(const std::string& dir, const std::string& novnc_dir) {
  if (::access((novnc_dir + "/core/rfb.js").c_str(), R_OK) != 0) {
    return fail(ErrorCode::not_found,
                fmt::format("web root: novnc_dir {}: no core/rfb.js there (is noVNC installed? viz.json's novnc_dir "
                            "must name the directory holding noVNC's core/ and vendor/)",
                            novnc_dir));
  }
  if (auto ok = make_dirs(dir, 0755); !ok) return std::unexpected(ok.error().within("web root"));
  for (const char* part : {"core", "vendor"}) {
    if (auto ok = link_to(fmt::format("{}/{}", novnc_dir, part), fmt::format("{}/{}", dir, part)); !ok) return ok;
  }
  return write_file_atomic(fmt::format("{}/{}", dir, kSessionPageName), dir, std::string(kSessionPage), 0644);
}

}  // namespace vgpu::viz
