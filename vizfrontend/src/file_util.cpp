#include "file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include <algorithm>

#include "vgpu/contract/atomic_file.h"
#include <fstream>
#include <sstream>

namespace vgpu::viz {

FileSystem& contract_fs() { return posix_file_system(); }

Result<void> write_file_atomic(const std::string& path, const std::string& tmp_dir, const std::string& content,
                               unsigned mode) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return fail(ErrorCode::invalid_argument, fmt::format("{}: not an absolute path", path));
  return contract::atomic_replace(contract_fs(), path.substr(0, std::max<std::size_t>(slash, 1)),
                                  path.substr(slash + 1), content,
                                  contract::ReplaceOptions::durable_file(mode).with_temp_dir(tmp_dir));
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::not_found, fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<void> make_dirs(const std::string& path, unsigned mode) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
      return fail(ErrorCode::io, fmt::format("mkdir {}: {}", partial, std::strerror(errno)));
    }
  }
  return {};
}

Result<void> remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return fail(ErrorCode::io, fmt::format("remove {}: {}", path, std::strerror(errno)));
  }
  return {};
}

}  // namespace vgpu::viz
