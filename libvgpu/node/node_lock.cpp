#include "node_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace vgpu {

NodeLock::NodeLock(const std::string& path, LockWait wait) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  int rc;
  const int how = wait == LockWait::block ? LOCK_EX : LOCK_EX | LOCK_NB;
  do rc = ::flock(fd_, how);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    busy_ = errno == EWOULDBLOCK;
    ::close(fd_);
    fd_ = -1;
  }
}

NodeLock::~NodeLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace vgpu
