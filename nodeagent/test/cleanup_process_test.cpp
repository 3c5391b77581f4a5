// The epilog's cleanup hand-off as a process (adapters.h, make_cleanup_process_handoff): the
// program runs detached in a session of its own, with the instance list as arguments, and holds
// each cleanup lock from the moment the hand-off returns until it exits, so no other pass can take
// the instances in between, and nothing else the caller had open; a program that cannot start is
// an error the epilog falls back on.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "adapters.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
// A descriptor of the caller's without close-on-exec (as slurmd may leave one to its epilog).
constexpr int kLeaky = 57;

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool lock_is_free(const fs::path& lock) {
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

template <typename Pred>
bool within_seconds(int seconds, Pred pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class CleanupProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("vgpu-cleanup-test-{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Stands in for the hook program: says what it was given, then holds on until told to end.
    script_ = dir_ / "cleanup";
    std::ofstream(script_) << "#!/bin/sh\n"
                           << "echo \"$@\" > " << (dir_ / "args") << "\n"
                           << "cut -d' ' -f6 /proc/$$/stat > " << (dir_ / "session") << "\n"
                           << "[ -e /proc/$$/fd/" << kLeaky << " ] && echo leaked > " << (dir_ / "leaked") << "\n"
                           << "flock -n 3 && echo held > " << (dir_ / "fd3") << "\n"
                           << "while [ ! -e " << (dir_ / "go") << " ]; do sleep 0.05; done\n";
    fs::permissions(script_, fs::perms::owner_all);
  }
  void TearDown() override {
    std::ofstream(dir_ / "go").put('\n');
    fs::remove_all(dir_);
  }
  fs::path dir_, script_;
};

TEST_F(CleanupProcess, HoldsTheHandedLocksDetachedUntilItEnds) {
  const fs::path lock = dir_ / "cleanup-0-7.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ASSERT_EQ(::dup2(null_fd, kLeaky), kLeaky);  // dup2 leaves close-on-exec off
  ::close(null_fd);
  auto handoff = agent::make_cleanup_process_handoff(script_.string());
  auto handed = handoff->hand_off({{0, 7, fd}});
  ::close(kLeaky);
  ASSERT_TRUE(handed) << handed.error().message;
  ::close(fd);  // the epilog returns; its descriptor goes
  ASSERT_TRUE(within_seconds(5, [&] { return fs::exists(dir_ / "fd3"); })) << "the program got the lock on fd 3";
  EXPECT_FALSE(lock_is_free(lock)) << "the cleanup process holds it after the epilog let go";
  EXPECT_EQ(read_all(dir_ / "args"), "--finish-released 0:7\n");
  EXPECT_NE(std::stol(read_all(dir_ / "session")), static_cast<long>(::getsid(0))) << "a session of its own";
  EXPECT_FALSE(fs::exists(dir_ / "leaked")) << "descriptor " << kLeaky << " of the caller reached the cleanup process";
  std::ofstream(dir_ / "go").put('\n');
  EXPECT_TRUE(within_seconds(5, [&] { return lock_is_free(lock); })) << "its end frees the lock";
}

TEST_F(CleanupProcess, AProgramThatCannotStartIsAnErrorNamingIt) {
  const fs::path lock = dir_ / "cleanup-0-7.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const std::string missing = (dir_ / "no-such-program").string();
  auto handed = agent::make_cleanup_process_handoff(missing)->hand_off({{0, 7, fd}});
  ASSERT_FALSE(handed);
  EXPECT_NE(handed.error().message.find("cleanup process " + missing + ": cannot start it: No such file or directory"),
            std::string::npos)
      << handed.error().message;
  ::close(fd);
  EXPECT_TRUE(lock_is_free(lock)) << "nothing holds it once the caller lets go";
}

}  // namespace
}  // namespace vgpu
