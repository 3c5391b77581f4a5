// The published demand file: its one writer and its one reader, which trusts only what root or
// the reader's own user wrote, not writable by others, and not older than a minute.
#include "vgpu/contract/demand_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>

namespace vgpu::contract {
namespace {

namespace fs = std::filesystem;

class DemandFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("vgpu-demand-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    path = dir + "/demand.txt";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::int64_t now() const { return static_cast<std::int64_t>(std::time(nullptr)); }
  std::string dir, path;
};

TEST_F(DemandFile, WhatIsWrittenIsRead0644WhateverTheUmask) {
  const mode_t old = ::umask(0);
  ASSERT_TRUE(write_demand_file(posix_file_system(), path, "42|train|1|2026-11-22T20:50:01|Resources|N/A\n"));
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  auto text = read_demand_file(posix_file_system(), path, ::geteuid(), now());
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "42|train|1|2026-11-22T20:50:01|Resources|N/A\n");
}

TEST_F(DemandFile, AStaleOrMissingFileIsNotDemand) {
  ASSERT_TRUE(write_demand_file(posix_file_system(), path, "x\n"));
  auto stale = read_demand_file(posix_file_system(), path, ::geteuid(), now() + kDemandFileMaxAgeS + 5);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::unavailable);
  EXPECT_NE(stale.error().message.find("stale ("), std::string::npos) << stale.error().message;
  auto missing = read_demand_file(posix_file_system(), dir + "/none.txt", ::geteuid(), now());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("demand file " + dir + "/none.txt: missing"), std::string::npos)
      << missing.error().message;
}

TEST_F(DemandFile, AFileOthersCanWriteIsRefused) {
  ASSERT_TRUE(write_demand_file(posix_file_system(), path, "x\n"));
  ASSERT_EQ(::chmod(path.c_str(), 0664), 0);
  auto r = read_demand_file(posix_file_system(), path, ::geteuid(), now());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("mode 0664 (want root or uid"), std::string::npos) << r.error().message;
}

// A FIFO at the path (chmod 644, so it passes the mode check) would hang the planner in open(2)
// for good; it is refused at once, as is a device or a directory.
TEST_F(DemandFile, AFifoAtThePathIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto r = read_demand_file(posix_file_system(), path, ::geteuid(), now());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  auto device = read_demand_file(posix_file_system(), "/dev/zero", ::geteuid(), now());
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().message.find("not a regular file"), std::string::npos) << device.error().message;
}

// A symlink to any fresh root-owned file must not be read as demand.
TEST_F(DemandFile, ASymlinkAtThePathIsNeverFollowed) {
  const std::string target = dir + "/target.txt";
  ASSERT_TRUE(write_demand_file(posix_file_system(), target, "42|train|1|2026-11-22T20:50:01|Resources|N/A\n"));
  fs::create_symlink(target, path);
  auto r = read_demand_file(posix_file_system(), path, ::geteuid(), now());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("a symbolic link (never followed)"), std::string::npos) << r.error().message;
}

TEST_F(DemandFile, AFileOverTheSizeCapIsRefusedBeforeItIsRead) {
  ASSERT_TRUE(write_demand_file(posix_file_system(), path, "x\n"));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kDemandFileMaxBytes + 1)), 0);
  auto r = read_demand_file(posix_file_system(), path, ::geteuid(), now());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("over the 16777216 byte limit"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace vgpu::contract
