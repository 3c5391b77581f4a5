#include "atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vgpu::gres {

namespace {

Error sys_error(std::string_view syscall, const std::string& path, int err) {
  return Error{ErrorCode::io, std::string(syscall) + " " + path + ": " + std::strerror(err) + " (errno " +
                                  std::to_string(err) + ")"};
}

}  // namespace

Result<void> replace_file_atomically(const std::string& dir, const std::string& name, std::string_view text,
                                     mode_t mode, bool durable) {
  const std::string path = dir + "/" + name;
  const std::string tmp = dir + "/." + name + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return std::unexpected(sys_error("open", tmp, errno));
  // The mode the file is created with is filtered by the umask; readers may rely on it.
  if (::fchmod(fd, mode) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return std::unexpected(sys_error("fchmod", tmp, err));
  }
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return std::unexpected(sys_error("write", tmp, err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (durable && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return std::unexpected(sys_error("fsync", tmp, err));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(sys_error("close", tmp, err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(sys_error("rename", tmp + " -> " + path, err));
  }
  if (durable) {
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return std::unexpected(sys_error("open", dir, errno));
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0) return std::unexpected(sys_error("fsync", dir, err));
  }
  return {};
}

}  // namespace vgpu::gres
