#include "vgpu/contract/file_ops.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace vgpu::file_ops {
namespace {

// Retries a syscall that was interrupted by a signal before it did anything.
template <class Call>
auto retry(Call call) {
  for (;;) {
    auto r = call();
    if (r || r.error() != EINTR) return r;
  }
}

}  // namespace

Error sys_error(std::string_view syscall, std::string_view path, int err) {
  return Error{ErrorCode::io, std::string(syscall) + " " + std::string(path) + ": " + std::strerror(err) + " (errno " +
                                  std::to_string(err) + ")"};
}

File::~File() {
  if (fd_ >= 0) (void)fs_->close(fd_);
}

Result<std::string> File::read_all(std::uint64_t max_bytes) {
  std::string data;
  char buffer[65536];
  for (;;) {
    auto n = retry([&] { return fs_->read(fd_, buffer); });
    if (!n) return std::unexpected(sys_error("read", path_, n.error()));
    if (*n == 0) return data;
    data.append(buffer, *n);
    if (data.size() > max_bytes)
      return fail(ErrorCode::corrupt, path_ + ": larger than the " + std::to_string(max_bytes) + " byte limit");
  }
}

Result<char> File::read_byte_at(std::uint64_t offset) {
  char c = 0;
  auto n = retry([&] { return fs_->pread(fd_, std::span<char>(&c, 1), offset); });
  if (!n) return std::unexpected(sys_error("pread", path_, n.error()));
  if (*n != 1) return fail(ErrorCode::io, "pread " + path_ + ": nothing at offset " + std::to_string(offset));
  return c;
}

Result<void> File::write_all(std::string_view data) {
  while (!data.empty()) {
    auto n = retry([&] { return fs_->write(fd_, std::span<const char>(data.data(), data.size())); });
    if (!n) return std::unexpected(sys_error("write", path_, n.error()));
    // write(2) returning 0 for a non-empty buffer would loop forever; treat it as full disk.
    if (*n == 0) return std::unexpected(sys_error("write", path_, ENOSPC));
    data.remove_prefix(*n);
  }
  return {};
}

Result<void> File::fsync() {
  auto r = retry([&] { return fs_->fsync(fd_); });
  if (!r) return std::unexpected(sys_error("fsync", path_, r.error()));
  return {};
}

Result<void> File::fchown(uid_t owner, gid_t group) {
  auto r = retry([&] { return fs_->fchown(fd_, owner, group); });
  if (!r) return std::unexpected(sys_error("fchown", path_, r.error()));
  return {};
}

Result<void> File::fchmod(unsigned mode) {
  auto r = retry([&] { return fs_->fchmod(fd_, mode); });
  if (!r) return std::unexpected(sys_error("fchmod", path_, r.error()));
  return {};
}

Result<void> File::ftruncate(std::uint64_t size) {
  auto r = retry([&] { return fs_->ftruncate(fd_, size); });
  if (!r) return std::unexpected(sys_error("ftruncate", path_, r.error()));
  return {};
}

Result<FileInfo> File::fstat() {
  auto r = retry([&] { return fs_->fstat(fd_); });
  if (!r) return std::unexpected(sys_error("fstat", path_, r.error()));
  return *r;
}

Result<void> File::flock(int operation) {
  auto r = retry([&] { return fs_->flock(fd_, operation); });
  if (!r) return std::unexpected(sys_error("flock", path_, r.error()));
  return {};
}

Result<void> File::close() {
  int fd = std::exchange(fd_, -1);
  auto r = fs_->close(fd);
  // EINTR from close still released the descriptor (Linux); the data was handed to the kernel.
  if (!r && r.error() != EINTR) return std::unexpected(sys_error("close", path_, r.error()));
  return {};
}

Result<File> open(FileSystem& fs, const std::string& path, int flags, unsigned mode) {
  auto fd = retry([&] { return fs.open(path, flags, mode); });
  if (!fd) return std::unexpected(sys_error("open", path, fd.error()));
  return File(fs, *fd, path);
}

Result<std::optional<File>> open_if_exists(FileSystem& fs, const std::string& path, int flags) {
  auto fd = retry([&] { return fs.open(path, flags, 0); });
  if (!fd && fd.error() == ENOENT) return std::optional<File>();
  if (!fd) return std::unexpected(sys_error("open", path, fd.error()));
  return std::optional<File>(File(fs, *fd, path));
}

Result<void> rename(FileSystem& fs, const std::string& from, const std::string& to) {
  auto r = retry([&] { return fs.rename(from, to); });
  if (!r) return std::unexpected(sys_error("rename", from + " -> " + to, r.error()));
  return {};
}

Result<void> unlink(FileSystem& fs, const std::string& path) {
  auto r = retry([&] { return fs.unlink(path); });
  if (!r) return std::unexpected(sys_error("unlink", path, r.error()));
  return {};
}

Result<FileInfo> stat(FileSystem& fs, const std::string& path) {
  auto r = retry([&] { return fs.stat(path); });
  if (!r) return std::unexpected(sys_error("stat", path, r.error()));
  return *r;
}

}  // namespace vgpu::file_ops
