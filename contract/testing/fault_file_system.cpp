#include "fault_file_system.h"

#include <unistd.h>

#include <algorithm>

namespace vgpu::testing {

const char* op_name(Op op) {
  switch (op) {
    case Op::open: return "open";
    case Op::close: return "close";
    case Op::read: return "read";
    case Op::pread: return "pread";
    case Op::write: return "write";
    case Op::fsync: return "fsync";
    case Op::ftruncate: return "ftruncate";
    case Op::fchmod: return "fchmod";
    case Op::fchown: return "fchown";
    case Op::fstat: return "fstat";
    case Op::stat: return "stat";
    case Op::rename: return "rename";
    case Op::unlink: return "unlink";
    case Op::mkdir: return "mkdir";
    case Op::list_dir: return "list_dir";
    case Op::flock: return "flock";
  }
  return "?";
}

std::string FaultFileSystem::path_of(int fd) const {
  auto it = paths_.find(fd);
  return it == paths_.end() ? "fd?" : it->second;
}

const Fault* FaultFileSystem::hit(Op op, const std::string& path) {
  calls_.push_back(std::string(op_name(op)) + " " + path);
  const Fault* found = nullptr;
  for (auto& armed : faults_) {
    const Fault& f = armed.fault;
    if (f.op && *f.op != op) continue;
    if (!f.path_contains.empty() && path.find(f.path_contains) == std::string::npos) continue;
    ++armed.seen;
    if (!found && armed.seen >= f.nth && armed.seen < f.nth + f.times) found = &f;
  }
  if (found && found->crash && !found->short_write) ::_exit(kCrashExitCode);
  return found;
}

SysResult<int> FaultFileSystem::open(const std::string& path, int flags, unsigned mode) {
  if (const Fault* f = hit(Op::open, path)) return std::unexpected(f->error);
  auto fd = real_.open(path, flags, mode);
  if (fd) paths_[*fd] = path;
  return fd;
}

SysResult<void> FaultFileSystem::close(int fd) {
  const Fault* f = hit(Op::close, path_of(fd));
  paths_.erase(fd);
  auto r = real_.close(fd);  // Linux releases the descriptor even when close reports an error
  if (f) return std::unexpected(f->error);
  return r;
}

SysResult<std::size_t> FaultFileSystem::read(int fd, std::span<char> buffer) {
  if (const Fault* f = hit(Op::read, path_of(fd))) return std::unexpected(f->error);
  return real_.read(fd, buffer);
}

SysResult<std::size_t> FaultFileSystem::pread(int fd, std::span<char> buffer, std::uint64_t offset) {
  if (const Fault* f = hit(Op::pread, path_of(fd))) return std::unexpected(f->error);
  return real_.pread(fd, buffer, offset);
}

SysResult<std::size_t> FaultFileSystem::write(int fd, std::span<const char> data) {
  const Fault* f = hit(Op::write, path_of(fd));
  if (f && f->short_write) {
    auto n = real_.write(fd, data.first(std::min(*f->short_write, data.size())));
    if (f->crash) ::_exit(kCrashExitCode);
    return n;
  }
  if (f) return std::unexpected(f->error);
  return real_.write(fd, data);
}

SysResult<void> FaultFileSystem::fsync(int fd) {
  if (const Fault* f = hit(Op::fsync, path_of(fd))) return std::unexpected(f->error);
  return real_.fsync(fd);
}

SysResult<void> FaultFileSystem::fchown(int fd, uid_t owner, gid_t group) {
  if (const Fault* f = hit(Op::fchown, path_of(fd))) return std::unexpected(f->error);
  return real_.fchown(fd, owner, group);
}

SysResult<void> FaultFileSystem::fchmod(int fd, unsigned mode) {
  if (const Fault* f = hit(Op::fchmod, path_of(fd))) return std::unexpected(f->error);
  return real_.fchmod(fd, mode);
}

SysResult<void> FaultFileSystem::ftruncate(int fd, std::uint64_t size) {
  if (const Fault* f = hit(Op::ftruncate, path_of(fd))) return std::unexpected(f->error);
  return real_.ftruncate(fd, size);
}

SysResult<FileInfo> FaultFileSystem::fstat(int fd) {
  if (const Fault* f = hit(Op::fstat, path_of(fd))) return std::unexpected(f->error);
  return real_.fstat(fd);
}

SysResult<FileInfo> FaultFileSystem::stat(const std::string& path) {
  if (const Fault* f = hit(Op::stat, path)) return std::unexpected(f->error);
  return real_.stat(path);
}

SysResult<void> FaultFileSystem::rename(const std::string& from, const std::string& to) {
  if (const Fault* f = hit(Op::rename, from + " -> " + to)) return std::unexpected(f->error);
  return real_.rename(from, to);
}

SysResult<void> FaultFileSystem::unlink(const std::string& path) {
  if (const Fault* f = hit(Op::unlink, path)) return std::unexpected(f->error);
  return real_.unlink(path);
}

SysResult<void> FaultFileSystem::mkdir(const std::string& path, unsigned mode) {
  if (const Fault* f = hit(Op::mkdir, path)) return std::unexpected(f->error);
  return real_.mkdir(path, mode);
}

SysResult<std::vector<std::string>> FaultFileSystem::list_dir(const std::string& path) {
  if (const Fault* f = hit(Op::list_dir, path)) return std::unexpected(f->error);
  return real_.list_dir(path);
}

SysResult<void> FaultFileSystem::flock(int fd, int operation) {
  if (const Fault* f = hit(Op::flock, path_of(fd))) return std::unexpected(f->error);
  return real_.flock(fd, operation);
}

}  // namespace vgpu::testing
