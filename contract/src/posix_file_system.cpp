// The real FileSystem: each method is exactly one syscall, errno passed back untouched.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vgpu/contract/file_system.h"

namespace vgpu {
namespace {

std::unexpected<int> last_errno() { return std::unexpected(errno); }

FileInfo info_of(const struct stat& st) {
  return FileInfo{S_ISREG(st.st_mode),
                  S_ISDIR(st.st_mode),
                  static_cast<unsigned>(st.st_mode & 07777),
                  st.st_uid,
                  static_cast<std::uint64_t>(st.st_size),
                  static_cast<std::int64_t>(st.st_mtime)};
}

class PosixFileSystem final : public FileSystem {
 public:
  SysResult<int> open(const std::string& path, int flags, unsigned mode) override {
    int fd = ::open(path.c_str(), flags, static_cast<mode_t>(mode));
    if (fd < 0) return last_errno();
    return fd;
  }
  SysResult<void> close(int fd) override {
    if (::close(fd) != 0) return last_errno();
    return {};
  }
  SysResult<std::size_t> read(int fd, std::span<char> buffer) override {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) return last_errno();
    return static_cast<std::size_t>(n);
  }
  SysResult<std::size_t> pread(int fd, std::span<char> buffer, std::uint64_t offset) override {
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (n < 0) return last_errno();
    return static_cast<std::size_t>(n);
  }
  SysResult<std::size_t> write(int fd, std::span<const char> data) override {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) return last_errno();
    return static_cast<std::size_t>(n);
  }
  SysResult<void> fsync(int fd) override {
    if (::fsync(fd) != 0) return last_errno();
    return {};
  }
  SysResult<void> fchown(int fd, uid_t owner, gid_t group) override {
    if (::fchown(fd, owner, group) != 0) return last_errno();
    return {};
  }
  SysResult<void> fchmod(int fd, unsigned mode) override {
    if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) return last_errno();
    return {};
  }
  SysResult<void> ftruncate(int fd, std::uint64_t size) override {
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return last_errno();
    return {};
  }
  SysResult<FileInfo> fstat(int fd) override {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return last_errno();
    return info_of(st);
  }
  SysResult<FileInfo> stat(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return last_errno();
    return info_of(st);
  }
  SysResult<void> rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return last_errno();
    return {};
  }
  SysResult<void> unlink(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return last_errno();
    return {};
  }
  SysResult<void> mkdir(const std::string& path, unsigned mode) override {
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0) return last_errno();
    return {};
  }
  SysResult<std::vector<std::string>> list_dir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return last_errno();
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) return std::unexpected(err);
    return names;
  }
  SysResult<void> flock(int fd, int operation) override {
    if (::flock(fd, operation) != 0) return last_errno();
    return {};
  }
};

}  // namespace

FileSystem& posix_file_system() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace vgpu
