#include "file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace vgpu::viz {

Result<void> write_file_atomic(const std::string& path, const std::string& tmp_dir, const std::string& content,
                               unsigned mode) {
  std::string tmpl = tmp_dir + "/.tmp-XXXXXX";
  const int fd = mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return fail(ErrorCode::io, fmt::format("{}: temp file in {}: {}", path, tmp_dir, std::strerror(errno)));
  auto cleanup_fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return fail(ErrorCode::io, fmt::format("{}: {}: {}", path, what, std::strerror(err)));
  };
  if (fchmod(fd, static_cast<mode_t>(mode)) != 0) return cleanup_fail("chmod");
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return cleanup_fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0) return cleanup_fail("fsync");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return fail(ErrorCode::io, fmt::format("{}: close: {}", path, std::strerror(errno)));
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    return fail(ErrorCode::io, fmt::format("{}: rename: {}", path, std::strerror(err)));
  }
  return {};
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
