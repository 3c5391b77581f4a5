// What the device-confinement adapter tests check on a file: its owner and mode, and whether a
// process of another uid can open it (a child that drops root to that uid, group nogroup).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <utility>

namespace vgpu::testing {

inline std::pair<unsigned, unsigned> owner_and_mode(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return {st.st_uid, st.st_mode & 07777};
}

// `flags`: O_RDONLY for a capability file, O_RDWR for a GPU device file (as CUDA opens each).
inline bool opens_as(const std::filesystem::path& p, unsigned uid, int flags = O_RDONLY) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(uid, uid, uid) != 0)
      ::_exit(2);
    const int fd = ::open(p.c_str(), flags);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 2) << "could not become uid " << uid;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace vgpu::testing
