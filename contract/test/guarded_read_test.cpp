// The one rule for reading a file that steers a node: no symlink followed, no open or read that
// can block, checks on the descriptor, a size cap.
#include "vgpu/contract/guarded_read.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace vgpu::contract {
namespace {

namespace fs = std::filesystem;

class GuardedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("vgpu-guarded-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    path = dir + "/policy.json";
  }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }
  Result<GuardedText> read(std::uint64_t cap = 1024) {
    return read_guarded(posix_file_system(), path, {.what = "policy", .max_bytes = cap, .owners = {}});
  }
  std::string dir, path;
};

TEST_F(GuardedReadTest, ARegularFileOfTheReaderIsRead) {
  write("{}\n");
  auto r = read();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->text, "{}\n");
  EXPECT_TRUE(r->info.is_regular);
}

TEST_F(GuardedReadTest, EachRefusalNamesTheFileAndWhy) {
  auto missing = read();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  EXPECT_EQ(missing.error().message, "policy " + path + ": no such file");

  write("{}\n", 0664);
  EXPECT_EQ(read().error().message, "policy " + path + ": refused: mode 0664 lets its group write it");
  write("{}\n", 0646);
  EXPECT_EQ(read().error().message, "policy " + path + ": refused: mode 0646 lets everyone write it");
  write(std::string(2000, ' '));
  EXPECT_EQ(read().error().message, "policy " + path + ": refused: 2000 bytes, over the 1024 byte limit");
  auto other = read_guarded(posix_file_system(), path, {.what = "policy", .max_bytes = 4096, .owners = {12345}});
  ASSERT_FALSE(other);
  EXPECT_NE(
      other.error().message.find("refused: owned by uid " + std::to_string(::geteuid()) + " (trusted: uid 12345)"),
      std::string::npos)
      << other.error().message;
}

TEST_F(GuardedReadTest, ASymlinkIsRefusedNotFollowed) {
  const std::string target = dir + "/real.json";
  std::ofstream(target) << "{}\n";
  fs::create_symlink(target, path);
  auto r = read();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().message, "policy " + path + ": refused: a symbolic link (never followed)");
}

TEST_F(GuardedReadTest, AFifoDeviceOrDirectoryIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  EXPECT_EQ(read().error().message, "policy " + path + ": refused: not a regular file");
  auto device = read_guarded(posix_file_system(), "/dev/zero", {.what = "policy", .max_bytes = 16, .owners = {}});
  EXPECT_EQ(device.error().message, "policy /dev/zero: refused: not a regular file");
  auto directory = read_guarded(posix_file_system(), dir, {.what = "policy", .max_bytes = 16, .owners = {}});
  EXPECT_EQ(directory.error().message, "policy " + dir + ": refused: a directory, not a regular file");
}

}  // namespace
}  // namespace vgpu::contract
