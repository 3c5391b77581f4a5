// The MPS adapter against the fake nvidia-cuda-mps-control (fakemps/): a shared instance's daemon
// is started in its own directories with each share's limits as its servers' defaults, a job's
// client gets exactly those limits whatever its environment asks, and closing leaves nothing.
// The same adapter ran against the real daemon on an H100 (benchmarks/mps/h100_mps_adapter.sh).
#include <signal.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "adapters.h"
#include "process.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
constexpr const char* kMig = "MIG-5c2d7b2e-8f3a-5b1e-9d4c-0a1b2c3d4e5f";
const std::string kFakes = std::string(VGPU_SOURCE_DIR) + "/fakemps";

// Ended, zombies included: the fake daemon's adoptive parent may reap it late.
bool ended(int pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return text.empty() || (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z');
}

class MpsControlAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("vgpu-mps-test-{}-{}", ::getpid(), counter_++);
    fs::remove_all(root_);
    ::setenv("VGPU_MPS_CONTROL", (kFakes + "/nvidia-cuda-mps-control").c_str(), 1);
    mps_ = agent::make_command_mps_control(root_.string());
  }
  void TearDown() override {
    if (auto devices = mps_->devices())
      for (const auto& d : *devices) (void)mps_->close(d);
    fs::remove_all(root_);
    ::unsetenv("VGPU_MPS_CONTROL");
  }

  // What a job's process gets: fake-mps-client with the job's pipe directory and `env`.
  nlohmann::json client(const std::string& pipe, std::map<std::string, std::string> env, int alloc_mib) {
    agent::CommandOptions options;
    env["CUDA_MPS_PIPE_DIRECTORY"] = pipe;
    options.set_env = env;
    auto r = agent::run_command({kFakes + "/fake-mps-client", "--alloc-mib", std::to_string(alloc_mib)}, options);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->err : r.error().message);
    return r ? nlohmann::json::parse(r->out) : nlohmann::json{};
  }

  std::optional<int> daemon_pid(const std::string& pipe) {
    std::ifstream in(pipe + "/nvidia-cuda-mps-control.pid");
    int pid = 0;
    if (in >> pid) return pid;
    return std::nullopt;
  }

  static inline int counter_ = 0;
  fs::path root_;
  std::unique_ptr<MpsControl> mps_;
};

TEST_F(MpsControlAdapter, AJobsClientGetsTheSharesLimitsAndCannotRaiseThem) {
  const ShareLimits quarter{10112, 25};
  auto pipe = mps_->open(kMig, quarter);
  ASSERT_TRUE(pipe) << pipe.error().message;
  EXPECT_EQ(*pipe, (root_ / kMig / "pipe").string());

  const auto plain = client(*pipe, {}, 8192);
  EXPECT_EQ(plain["mps"], true);
  EXPECT_EQ(plain["thread_percentage"], 25.0);
  EXPECT_EQ(plain["memory_limit_mib"], 10112);
  EXPECT_EQ(plain["alloc"], "ok");

  const auto greedy = client(
      *pipe, {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"}, {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=70G"}}, 20000);
  EXPECT_EQ(greedy["thread_percentage"], 25.0) << "a client cannot raise the server's share";
  EXPECT_EQ(greedy["memory_limit_mib"], 10112);
  EXPECT_EQ(greedy["alloc"], "out of memory");

  const auto modest =
      client(*pipe, {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "10"}, {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=2G"}}, 0);
  EXPECT_EQ(modest["thread_percentage"], 10.0) << "a client may lower its own";
  EXPECT_EQ(modest["memory_limit_mib"], 2048);
}

TEST_F(MpsControlAdapter, TheDaemonsDirectoriesAreRootsAndItsLogIsPrivate) {
  auto pipe = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(pipe) << pipe.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(pipe->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u) << "clients reach the sockets in it; nobody else writes there";
  ASSERT_EQ(::stat((root_ / kMig / "log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(MpsControlAdapter, ClosingQuitsTheDaemonAndRemovesItsDirectoriesAndMayBeRepeated) {
  auto pipe = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(pipe) << pipe.error().message;
  const auto pid = daemon_pid(*pipe);
  ASSERT_TRUE(pid);
  ASSERT_EQ(mps_->devices(), std::vector<std::string>{kMig});

  ASSERT_TRUE(mps_->close(kMig));
  EXPECT_FALSE(fs::exists(root_ / kMig));
  EXPECT_TRUE(ended(*pid)) << "the daemon is gone";
  EXPECT_EQ(mps_->devices(), std::vector<std::string>{});
  EXPECT_TRUE(mps_->close(kMig)) << "nothing left to close is success";

  const auto after = client(*pipe, {}, 20000);
  EXPECT_EQ(after["mps"], false) << "no daemon answers at that pipe directory any more";
}

TEST_F(MpsControlAdapter, ARetriedOpenKeepsTheRunningDaemon) {
  auto first = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(first) << first.error().message;
  const auto pid = daemon_pid(*first);
  auto again = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(daemon_pid(*again), pid);
  EXPECT_EQ(client(*again, {}, 0)["memory_limit_mib"], 4096);
}

TEST_F(MpsControlAdapter, WhatAKilledDaemonLeftIsReplacedOnOpenAndRemovedOnClose) {
  auto pipe = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(pipe) << pipe.error().message;
  const auto pid = daemon_pid(*pipe);
  ASSERT_TRUE(pid);
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  for (int i = 0; i < 200 && !ended(*pid); ++i) ::usleep(5000);

  auto reopened = mps_->open(kMig, ShareLimits{2048, 25});
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_NE(daemon_pid(*reopened), pid);
  EXPECT_EQ(client(*reopened, {}, 0)["memory_limit_mib"], 2048);

  ASSERT_EQ(::kill(*daemon_pid(*reopened), SIGKILL), 0);
  ::usleep(50000);
  EXPECT_TRUE(mps_->close(kMig)) << "a dead daemon's directories are simply removed";
  EXPECT_FALSE(fs::exists(root_ / kMig));
}

// As on the H100 (benchmarks/results/mps_adapter_h100.txt): the control socket is open to every
// user, whose clients get the share's limits, but only root may change the defaults or quit.
TEST_F(MpsControlAdapter, AnotherUserGetsTheLimitsButCannotChangeThemOrQuitTheDaemon) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  auto pipe = mps_->open(kMig, ShareLimits{4096, 25});
  ASSERT_TRUE(pipe) << pipe.error().message;
  const auto as_nobody = [&](std::vector<std::string> argv, const std::string& input) {
    argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    agent::CommandOptions options;
    options.input = input;
    options.set_env = {{"CUDA_MPS_PIPE_DIRECTORY", *pipe}};
    auto r = agent::run_command(argv, options);
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->out + r->err : std::string();
  };
  const auto got = nlohmann::json::parse(as_nobody({kFakes + "/fake-mps-client"}, ""));
  EXPECT_EQ(got["mps"], true);
  EXPECT_EQ(got["memory_limit_mib"], 4096);
  EXPECT_EQ(got["thread_percentage"], 25.0);

  EXPECT_NE(as_nobody({kFakes + "/nvidia-cuda-mps-control"}, "set_default_device_pinned_mem_limit 0 70G\n")
                .find("Insufficient privileges for UID 65534"),
            std::string::npos);
  EXPECT_NE(as_nobody({kFakes + "/nvidia-cuda-mps-control"}, "quit\n").find("Not enough privilege"), std::string::npos);
  const auto after = nlohmann::json::parse(as_nobody({kFakes + "/fake-mps-client"}, ""));
  EXPECT_EQ(after["memory_limit_mib"], 4096) << "the daemon still runs with root's limits";
  EXPECT_TRUE(mps_->close(kMig));
}

TEST_F(MpsControlAdapter, ADaemonThatRefusesTheLimitsIsQuitNotLeftServingWithoutThem) {
  auto pipe = mps_->open(kMig, ShareLimits{4096, 0});  // the daemon refuses a 0 % share
  ASSERT_FALSE(pipe);
  EXPECT_NE(pipe.error().message.find("unexpected reply \"Invalid percentage\""), std::string::npos)
      << pipe.error().message;
  EXPECT_EQ(mps_->devices(), std::vector<std::string>{});
  EXPECT_EQ(client((root_ / kMig / "pipe").string(), {}, 0)["mps"], false);
}

TEST_F(MpsControlAdapter, TheRootAndItsParentsAreMadeWhenMissing) {
  auto deep = agent::make_command_mps_control((root_ / "run" / "slurm-vgpu" / "mps").string());
  auto pipe = deep->open(kMig, ShareLimits{4096, 50});
  ASSERT_TRUE(pipe) << pipe.error().message;
  EXPECT_TRUE(deep->close(kMig));
}

TEST_F(MpsControlAdapter, AHostileDeviceNameIsRefusedBeforeAnythingIsMade) {
  auto pipe = mps_->open("MIG-../../etc", ShareLimits{4096, 50});
  ASSERT_FALSE(pipe);
  EXPECT_EQ(pipe.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(pipe.error().message.find("device \"MIG-../../etc\""), std::string::npos) << pipe.error().message;
  EXPECT_FALSE(fs::exists(root_));
  EXPECT_FALSE(mps_->close("../x"));
}

TEST_F(MpsControlAdapter, AMissingControlProgramIsNamedInTheError) {
  ::setenv("VGPU_MPS_CONTROL", "/nonexistent/nvidia-cuda-mps-control", 1);
  auto pipe = mps_->open(kMig, ShareLimits{4096, 50});
  ASSERT_FALSE(pipe);
  EXPECT_NE(pipe.error().message.find("MPS for " + std::string(kMig)), std::string::npos) << pipe.error().message;
  EXPECT_NE(pipe.error().message.find("/nonexistent/nvidia-cuda-mps-control"), std::string::npos)
      << pipe.error().message;
}

}  // namespace
}  // namespace vgpu
