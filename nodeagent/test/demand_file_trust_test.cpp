// The published demand file (VGPU_DEMAND_FILE) decides every node's layout, so a planner reads it
// only when root or the planner's own user owns it and neither group nor others can write it.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "adapters.h"

namespace vgpu {
namespace {

class DemandFileTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-demand-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/demand.txt";
    std::ofstream(path_) << "42|train|4294|2026-11-22T20:50:01|Resources|gres:vgpu:1g.10gb:2\n";
    ::setenv("VGPU_DEMAND_FILE", path_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("VGPU_DEMAND_FILE");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_, path_;
};

TEST_F(DemandFileTrust, OwnFileNotWritableByOthersIsRead) {
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  auto jobs = agent::make_command_slurm_client()->pending_jobs();
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->jobs.size(), 1u);
  EXPECT_EQ(jobs->jobs[0].vgpu, (std::vector<GresRequest>{{"1g.10gb", 2}}));
}

TEST_F(DemandFileTrust, GroupOrWorldWritableFileIsRefused) {
  for (unsigned mode : {0664u, 0646u, 0666u}) {
    ASSERT_EQ(::chmod(path_.c_str(), mode), 0);
    auto jobs = agent::make_command_slurm_client()->pending_jobs();
    ASSERT_FALSE(jobs) << std::oct << mode;
    EXPECT_EQ(jobs.error().code, ErrorCode::unavailable);
    EXPECT_NE(jobs.error().message.find("not writable by group or others"), std::string::npos) << jobs.error().message;
  }
}

TEST_F(DemandFileTrust, FileOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file away";
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  ASSERT_EQ(::chown(path_.c_str(), 65534, 65534), 0);
  auto jobs = agent::make_command_slurm_client()->pending_jobs();
  ASSERT_FALSE(jobs);
  EXPECT_NE(jobs.error().message.find("owner uid 65534"), std::string::npos) << jobs.error().message;
}

}  // namespace
}  // namespace vgpu
