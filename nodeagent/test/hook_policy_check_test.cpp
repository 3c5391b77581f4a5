// The planner serves a hook only with the hook's own policy file, unchanged since it loaded it;
// every other case declines with a reason, and the hook then does the work with the file as it
// is now (hook_socket_test covers that side).
#include "hook_policy_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <filesystem>
#include <fstream>

namespace vgpu::agent {
namespace {

namespace fs = std::filesystem;

class HookPolicyCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::path("vgpu-policy-check-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "policy.json").string();
    write(R"({"version": 1})");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::trunc) << text; }
  contract::HookRequest request_for(const std::string& policy) const {
    contract::HookRequest r;
    r.job = 42;
    r.policy = policy;
    return r;
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(HookPolicyCheck, ServesWithTheHooksOwnUnchangedPolicy) {
  auto policy = PolicyIdentity::of(path_);
  EXPECT_EQ(why_not_serve(request_for(path_), policy), "");
  EXPECT_EQ(why_not_serve(request_for(path_), policy), "") << "asking twice changes nothing";
}

TEST_F(HookPolicyCheck, DeclinesAnotherPolicyFileNamingBoth) {
  auto policy = PolicyIdentity::of(path_);
  EXPECT_EQ(why_not_serve(request_for("/etc/slurm/other.json"), policy),
            "the hook's policy /etc/slurm/other.json is not the planner's (" + path_ + ")");
}

TEST_F(HookPolicyCheck, DeclinesOnceThePolicyIsEditedReplacedOrRemoved) {
  const std::string changed =
      "policy " + path_ + " changed since the planner started (restart vgpu-planner to serve hooks again)";
  {
    auto policy = PolicyIdentity::of(path_);
    write(R"({"version": 1, "comment": "edited in place"})");  // size and mtime change
    EXPECT_EQ(why_not_serve(request_for(path_), policy), changed);
  }
  {
    auto policy = PolicyIdentity::of(path_);
    const std::string next = path_ + ".new";
    std::ofstream(next) << R"({"version": 1, "comment": "edited in place"})";  // same size
    fs::rename(next, path_);                                                   // an editor's save: a new inode
    EXPECT_EQ(why_not_serve(request_for(path_), policy), changed);
  }
  {
    auto policy = PolicyIdentity::of(path_);
    struct timeval later[2] = {{2000000000, 0}, {2000000000, 0}};
    ASSERT_EQ(::utimes(path_.c_str(), later), 0);  // touched: same content, new mtime
    EXPECT_EQ(why_not_serve(request_for(path_), policy), changed);
  }
  {
    auto policy = PolicyIdentity::of(path_);
    fs::remove(path_);
    EXPECT_EQ(why_not_serve(request_for(path_), policy), changed);
  }
}

TEST_F(HookPolicyCheck, APolicyThePlannerCouldNotReadIsNeverServed) {
  const std::string late = (dir_ / "late.json").string();
  auto policy = PolicyIdentity::of(late);  // absent when the planner started
  std::ofstream(late) << R"({"version": 1})";
  EXPECT_EQ(why_not_serve(request_for(late), policy),
            "policy " + late + " changed since the planner started (restart vgpu-planner to serve hooks again)");
}

}  // namespace
}  // namespace vgpu::agent
