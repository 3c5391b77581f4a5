#include "vgpu/node/mps_text.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(MpsDirectories, EachDeviceHasItsOwnPipeAndLogDirectoryUnderTheRoot) {
  const auto dirs = mps_directories("/run/slurm-vgpu/mps", "MIG-5c2d7b2e-8f3a-5b1e-9d4c-0a1b2c3d4e5f");
  ASSERT_TRUE(dirs) << dirs.error().message;
  EXPECT_EQ(dirs->instance, "/run/slurm-vgpu/mps/MIG-5c2d7b2e-8f3a-5b1e-9d4c-0a1b2c3d4e5f");
  EXPECT_EQ(dirs->pipe, dirs->instance + "/pipe");
  EXPECT_EQ(dirs->log, dirs->instance + "/log");
  EXPECT_TRUE(mps_directories("/tmp/x", "GPU-0a1b2c3d"));
}

TEST(MpsDirectories, ADeviceNameThatCouldLeaveTheRootIsRefusedByName) {
  for (const char* hostile :
       {"../etc", "MIG-../../etc", "MIG-", "MIG-abc/def", "gpu-abc", "MIG-xyz", "", "MIG--abc", "MIG-abc def"}) {
    const auto dirs = mps_directories("/run/slurm-vgpu/mps", hostile);
    ASSERT_FALSE(dirs) << hostile;
    EXPECT_EQ(dirs.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(dirs.error().message.find(std::string("device \"") + hostile + "\""), std::string::npos)
        << dirs.error().message;
  }
  EXPECT_FALSE(mps_directories("relative/root", "MIG-abc"));
}

TEST(MpsDefaultCommands, TheCapAndTheShareAreSetForDeviceZeroInMebibytesAndPercent) {
  EXPECT_EQ(mps_default_commands(ShareLimits{10112, 25}),
            (std::vector<std::string>{"set_default_device_pinned_mem_limit 0 10112M",
                                      "set_default_active_thread_percentage 25"}));
}

TEST(MpsReplies, ThePercentageIsEchoedAsADecimalAndTheMemoryCapAnswersNothing) {
  // As the real daemon answered on an H100 (benchmarks/results/mps_facts_h100.txt).
  EXPECT_TRUE(check_mps_reply("set_default_active_thread_percentage 25", "25.0\n"));
  EXPECT_TRUE(check_mps_reply("set_default_device_pinned_mem_limit 0 4096M", ""));
  const auto wrong = check_mps_reply("set_default_active_thread_percentage 25", "100.0\n");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("unexpected reply \"100.0\""), std::string::npos) << wrong.error().message;
  EXPECT_FALSE(check_mps_reply("set_default_device_pinned_mem_limit 0 4096M", "Invalid device\n"));
  EXPECT_FALSE(check_mps_reply("quit", ""));
  // What the real daemon answers a user who is neither root nor its owner, with exit status 0.
  EXPECT_FALSE(check_mps_reply("set_default_device_pinned_mem_limit 0 4096M",
                               "Insufficient privileges for UID 1001. Control deamon settings can only be modified "
                               "by the user who started it or by the root user.\n"));
}

TEST(MpsReplies, TheServerListIsOnePidPerLine) {
  EXPECT_EQ(parse_mps_server_list(""), std::vector<int>{});
  EXPECT_EQ(parse_mps_server_list("781\n"), std::vector<int>{781});
  EXPECT_EQ(parse_mps_server_list("781\n902\n"), (std::vector<int>{781, 902}));
  EXPECT_FALSE(parse_mps_server_list("781\nno server\n"));
}

}  // namespace
}  // namespace vgpu
