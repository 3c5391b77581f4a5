// Test double for the FileSystem seam: forwards to the real filesystem (in a temporary directory)
// and, for the calls a Fault matches, returns an errno instead, writes only part of the buffer,
// or ends the process on the spot (_exit, no destructors, no flush) to act as a crash. Crash
// faults are only used in forked children.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vgpu/contract/file_system.h"

namespace vgpu::testing {

inline constexpr int kCrashExitCode = 86;

enum class Op {
  open,
  close,
  read,
  pread,
  write,
  fsync,
  ftruncate,
  fchmod,
  fchown,
  fstat,
  stat,
  rename,
  unlink,
  mkdir,
  list_dir,
  flock
};
const char* op_name(Op op);

struct Fault {
  std::optional<Op> op{};                    // nullopt: any syscall
  std::string path_contains{};               // "": any path (fd calls match the path they were opened with)
  int nth = 1;                               // first matching call it hits (1-based)
  int times = 1;                             // how many matching calls in a row it hits
  int error = 0;                             // errno to return without doing the call
  std::optional<std::size_t> short_write{};  // write at most this many bytes (write only)
  bool crash = false;                        // _exit(kCrashExitCode) (after the short write, if any)
};

class FaultFileSystem final : public FileSystem {
 public:
  explicit FaultFileSystem(FileSystem& real = posix_file_system()) : real_(real) {}

  void add(Fault fault) { faults_.push_back({std::move(fault), 0}); }
  void clear() { faults_.clear(); }
  // Every call made, as "<op> <path>", in order.
  [[nodiscard]] const std::vector<std::string>& calls() const { return calls_; }

  SysResult<int> open(const std::string& path, int flags, unsigned mode) override;
  SysResult<void> close(int fd) override;
  SysResult<std::size_t> read(int fd, std::span<char> buffer) override;
  SysResult<std::size_t> pread(int fd, std::span<char> buffer, std::uint64_t offset) override;
  SysResult<std::size_t> write(int fd, std::span<const char> data) override;
  SysResult<void> fsync(int fd) override;
  SysResult<void> ftruncate(int fd, std::uint64_t size) override;
  SysResult<void> fchmod(int fd, unsigned mode) override;
  SysResult<void> fchown(int fd, uid_t owner, gid_t group) override;
  SysResult<FileInfo> fstat(int fd) override;
  SysResult<FileInfo> stat(const std::string& path) override;
  SysResult<void> rename(const std::string& from, const std::string& to) override;
  SysResult<void> unlink(const std::string& path) override;
  SysResult<void> mkdir(const std::string& path, unsigned mode) override;
  SysResult<std::vector<std::string>> list_dir(const std::string& path) override;
  SysResult<void> flock(int fd, int operation) override;

 private:
  struct Armed {
    Fault fault;
    int seen = 0;
  };
  // The fault hitting this call, if any; ends the process for a crash without a short write.
  const Fault* hit(Op op, const std::string& path);
  std::string path_of(int fd) const;

  FileSystem& real_;
  std::vector<Armed> faults_;
  std::vector<std::string> calls_;
  std::unordered_map<int, std::string> paths_;
};

}  // namespace vgpu::testing
