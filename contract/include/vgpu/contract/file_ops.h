// Careful use of the FileSystem seam: EINTR retried, short writes continued, and every failure
// turned into an `io` error that names the syscall, the path and the errno text. The ledger and
// atomic_replace (atomic_file.h) use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "vgpu/base/error.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::file_ops {

// "write /var/lib/slurm-vgpu/n1/ledger.json.tmp.42: No space left on device (errno 28)"
Error sys_error(std::string_view syscall, std::string_view path, int err);

// An open descriptor that remembers its path for error messages and closes itself.
class File {
 public:
  File(FileSystem& fs, int fd, std::string path) : fs_(&fs), fd_(fd), path_(std::move(path)) {}
  File(File&& other) noexcept : fs_(other.fs_), fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File& operator=(File&&) = delete;
  ~File();

  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  Result<std::string> read_all(std::uint64_t max_bytes);
  Result<char> read_byte_at(std::uint64_t offset);
  Result<void> write_all(std::string_view data);
  Result<void> fsync();
  Result<void> ftruncate(std::uint64_t size);
  Result<void> fchmod(unsigned mode);
  Result<void> fchown(uid_t owner, gid_t group);
  Result<FileInfo> fstat();
  Result<void> flock(int operation);
  // Closes now and reports the error, which a destructor could not.
  Result<void> close();

 private:
  FileSystem* fs_;
  int fd_;
  std::string path_;
};

Result<File> open(FileSystem& fs, const std::string& path, int flags, unsigned mode = 0600);
// Like open(), but a missing file is an empty optional rather than an error.
Result<std::optional<File>> open_if_exists(FileSystem& fs, const std::string& path, int flags);
Result<void> rename(FileSystem& fs, const std::string& from, const std::string& to);
Result<void> unlink(FileSystem& fs, const std::string& path);
Result<FileInfo> stat(FileSystem& fs, const std::string& path);

}  // namespace vgpu::file_ops
