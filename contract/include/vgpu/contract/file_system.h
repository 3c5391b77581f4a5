// The syscall seam under every state file (the ledger, atomic_replace): each file operation goes
// through this interface, one method per syscall, so tests can inject ENOSPC, EIO, EINTR, short
// writes and process death at any point. Methods report the raw errno; retrying EINTR, looping on short
// writes and turning errno into a message that names the syscall and path is the caller's job
// (see contract/file_ops.h), so the double exercises exactly the code that runs in production.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

namespace vgpu {

// A syscall's value, or the errno it failed with.
template <class T>
using SysResult = std::expected<T, int>;

struct FileInfo {
  bool is_regular = false;
  bool is_directory = false;
  unsigned mode = 0;  // permission bits only (st_mode & 07777)
  uid_t owner = 0;
  std::uint64_t size = 0;
  std::int64_t mtime = 0;  // Unix seconds
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual SysResult<int> open(const std::string& path, int flags, unsigned mode) = 0;
  // close() is never retried on EINTR: Linux releases the descriptor even then.
  virtual SysResult<void> close(int fd) = 0;
  virtual SysResult<std::size_t> read(int fd, std::span<char> buffer) = 0;
  virtual SysResult<std::size_t> pread(int fd, std::span<char> buffer, std::uint64_t offset) = 0;
  // May write fewer bytes than given, like write(2).
  virtual SysResult<std::size_t> write(int fd, std::span<const char> data) = 0;
  virtual SysResult<void> fsync(int fd) = 0;
  virtual SysResult<void> ftruncate(int fd, std::uint64_t size) = 0;
  virtual SysResult<void> fchmod(int fd, unsigned mode) = 0;
  virtual SysResult<void> fchown(int fd, uid_t owner, gid_t group) = 0;
  virtual SysResult<FileInfo> fstat(int fd) = 0;
  virtual SysResult<FileInfo> stat(const std::string& path) = 0;
  virtual SysResult<void> rename(const std::string& from, const std::string& to) = 0;
  virtual SysResult<void> unlink(const std::string& path) = 0;
  virtual SysResult<void> mkdir(const std::string& path, unsigned mode) = 0;
  // Entry names in a directory, without "." and "..".
  virtual SysResult<std::vector<std::string>> list_dir(const std::string& path) = 0;
  // flock(2); `operation` is LOCK_SH / LOCK_EX / LOCK_UN, optionally | LOCK_NB.
  virtual SysResult<void> flock(int fd, int operation) = 0;
};

// The process-wide POSIX implementation (stateless, thread-safe).
FileSystem& posix_file_system();

}  // namespace vgpu
