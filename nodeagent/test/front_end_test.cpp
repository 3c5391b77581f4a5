// The hook front end (front_end.h) hands the planner exactly what the work program would have
// handed it, and leaves every other case to the work program, unchanged.
#include "front_end.h"

#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "hook_socket.h"
#include "vgpu/contract/node_files.h"

namespace vgpu::agent {
namespace {

using contract::HookKind;

struct Fixture {
  std::map<std::string, std::string> env{
      {"SLURM_JOB_ID", "42"}, {"SLURMD_NODENAME", "n1"}, {"VGPU_STATE_DIR", "/state"}, {"VGPU_POLICY", "/etc/p.json"}};
  std::vector<std::string> records;  // job records that exist
  std::vector<std::string> asked;    // paths the front end looked for

  std::optional<FrontHandover> run(HookKind kind, int argc = 1, std::string_view host = "h1.example.org") {
    return front_handover(
        kind, argc,
        [this](const char* name) -> const char* {
          auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        host,
        [this](const std::string& path) {
          asked.push_back(path);
          return std::find(records.begin(), records.end(), path) != records.end();
        },
        777);
  }
};

TEST(HookFront, PrologWithItsAllocationIsHandedOverAsTheWorkProgramWould) {
  Fixture f;
  f.env["VGPU_ALLOC"] = "1g.10gb:2";
  f.env["SLURM_JOB_USER"] = "alice";
  f.env["SLURM_JOB_UID"] = "1000";
  f.env["SLURM_JOB_PARTITION"] = "infer";
  auto h = f.run(HookKind::prolog);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->socket_path, contract::hook_socket_path("/state", "n1"));
  const contract::HookRequest want{HookKind::prolog, 42, "alice", 1000u, "infer", "1g.10gb:2", "/etc/p.json", 777};
  EXPECT_EQ(h->request, want);
  EXPECT_TRUE(f.asked.empty()) << "a prolog does not look for a job record";
}

TEST(HookFront, PrologWithoutAnAllocationIsLeftToTheWorkProgram) {
  Fixture f;  // the work program asks the policy and Slurm whether the job holds anything here
  EXPECT_FALSE(f.run(HookKind::prolog));
}

TEST(HookFront, PrologWithAnUnreadableUidStillHandsOverWithoutOne) {
  Fixture f;
  f.env["VGPU_ALLOC"] = "1g.10gb:1";
  f.env["SLURM_JOB_UID"] = "10a";
  auto h = f.run(HookKind::prolog);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->request.uid, std::nullopt);
}

TEST(HookFront, EpilogIsHandedOverOnlyWhenTheJobHasARecordHere) {
  Fixture f;
  EXPECT_FALSE(f.run(HookKind::epilog));
  ASSERT_EQ(f.asked, std::vector<std::string>{contract::job_record_path("/state", "n1", 42)});
  f.records.push_back(contract::job_record_path("/state", "n1", 42));
  auto h = f.run(HookKind::epilog);
  ASSERT_TRUE(h);
  const contract::HookRequest want{HookKind::epilog, 42, "", std::nullopt, "", "", "/etc/p.json", 777};
  EXPECT_EQ(h->request, want);
}

TEST(HookFront, ArgumentsAServiceSwitchedOffAndBadJobIdsGoToTheWorkProgram) {
  Fixture f;
  f.env["VGPU_ALLOC"] = "1g.10gb:1";
  ASSERT_TRUE(f.run(HookKind::prolog));
  EXPECT_FALSE(f.run(HookKind::prolog, 2)) << "--help, --version, --finish-released";
  for (const char* bad : {"", "0", "12x", "-3", "99999999999999999999"}) {
    Fixture g = f;
    g.env["SLURM_JOB_ID"] = bad;
    EXPECT_FALSE(g.run(HookKind::prolog)) << "SLURM_JOB_ID '" << bad << "'";
  }
  Fixture off = f;
  off.env["VGPU_HOOK_SERVICE"] = "off";
  EXPECT_FALSE(off.run(HookKind::prolog));
}

TEST(HookFront, NodeNameFollowsTheContractsOrderAndRule) {
  Fixture f;
  f.env["VGPU_ALLOC"] = "1g.10gb:1";
  f.env["VGPU_NODENAME"] = "n7";
  EXPECT_EQ(f.run(HookKind::prolog)->socket_path, contract::hook_socket_path("/state", "n7"));
  f.env.erase("VGPU_NODENAME");
  f.env.erase("SLURMD_NODENAME");
  EXPECT_EQ(f.run(HookKind::prolog)->socket_path, contract::hook_socket_path("/state", "h1"));
  f.env["SLURMD_NODENAME"] = "../etc";
  EXPECT_FALSE(f.run(HookKind::prolog)) << "the work program reports a node name it cannot use";
}

TEST(HookFront, DefaultStateDirAndPolicyAreTheContracts) {
  Fixture f;
  f.env["VGPU_ALLOC"] = "1g.10gb:1";
  f.env.erase("VGPU_STATE_DIR");
  f.env.erase("VGPU_POLICY");
  auto h = f.run(HookKind::prolog);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->socket_path, contract::hook_socket_path(contract::resolve_state_dir(nullptr), "n1"));
  EXPECT_EQ(h->request.policy, contract::resolve_policy_path(nullptr));
}

// The planner's side of one hand-over, as in hook_socket_test.cpp; `decline` empty serves.
bool hand_over_once(const std::string& path, std::optional<std::string> decline, std::string& stderr_text) {
  auto listener = HookListener::open(path);
  if (!listener) return false;
  const contract::HookRequest request{HookKind::prolog, 42, "alice", 1000u, "infer", "1g.10gb:1", "/p", 1};
  testing::internal::CaptureStderr();
  auto client = std::async(std::launch::async, [&] { return served_by_planner(path, request); });
  pollfd p{listener->fd(), POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  (void)listener->serve_one([&](const contract::HookRequest&) { return decline; },
                            [](const contract::HookRequest&) { std::fprintf(stderr, "created 1g.10gb\n"); });
  const bool served = client.get();
  stderr_text = testing::internal::GetCapturedStderr();
  return served;
}

TEST(HookFront, AServedHookCopiesWhatTheWorkPrintedAndADeclinedOneSaysWhy) {
  const auto dir = std::filesystem::temp_directory_path() / ("vgpu-hookfront-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "hook.sock").string();
  std::string text;
  EXPECT_TRUE(hand_over_once(path, std::nullopt, text));
  EXPECT_EQ(text, "created 1g.10gb\n");
  EXPECT_FALSE(hand_over_once(path, std::string("policy /p changed"), text));
  EXPECT_EQ(text, "vgpu: prolog: job 42: the planner declined: policy /p changed; doing the work here\n");
  testing::internal::CaptureStderr();
  const contract::HookRequest request{HookKind::epilog, 7, "", std::nullopt, "", "", "/p", 1};
  EXPECT_FALSE(served_by_planner(path, request));  // no planner listening: the hook works itself, silently
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  std::filesystem::remove_all(dir);
}

TEST(HookFront, WorkProgramLiesNextToTheFrontEnd) {
  EXPECT_EQ(work_program_path("/usr/sbin/vgpu-prolog", HookKind::prolog), "/usr/sbin/vgpu-prolog-work");
  EXPECT_EQ(work_program_path("/opt/b/epilog/vgpu-epilog", HookKind::epilog), "/opt/b/epilog/vgpu-epilog-work");
  EXPECT_EQ(work_program_path("vgpu-epilog", HookKind::epilog), "./vgpu-epilog-work");
}

}  // namespace
}  // namespace vgpu::agent
