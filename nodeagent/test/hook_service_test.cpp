// The hook socket between a hook and its node's planner: a served hook gets the work's output and
// never runs it again; every way the planner can fail it (absent, declining, silent, killed
// mid-work) leaves the hook doing the work itself.
#include "hook_service.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

namespace vgpu::agent {
namespace {

namespace fs = std::filesystem;
using contract::HookKind;
using contract::HookRequest;

// As the planner does: serve only once a hook is waiting on the socket.
void wait_for_a_hook(const HookListener& listener) {
  pollfd p{listener.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "no hook connected within 5 s";
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  return addr;
}

class HookService : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("vgpu-hooksock-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    path = dir + "/hook.sock";
  }
  void TearDown() override { fs::remove_all(dir); }
  HookRequest request() const { return {HookKind::prolog, 42, "alice", 1000u, "infer", "1g.10gb:1", "/p", 1}; }
  std::string dir, path;
};

TEST_F(HookService, AServedHookGetsWhatTheWorkPrintedAndTheRequestItSent) {
  auto listener = HookListener::open(path);
  ASSERT_TRUE(listener) << listener.error().message;
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  auto client = std::async(std::launch::async, [&] { return delegate_to_planner(path, request()); });
  HookRequest seen;
  wait_for_a_hook(*listener);
  std::string note = listener->serve_one([](const HookRequest&) { return std::optional<std::string>(); },
                                         [&](const HookRequest& r) {
                                           seen = r;
                                           std::fprintf(stderr, "vgpu: prolog: job 42: created 1g.10gb\n");
                                           if (std::system("echo from a child >&2") != 0) std::abort();
                                         });
  auto d = client.get();
  EXPECT_EQ(note, "");
  EXPECT_TRUE(d.served) << d.why_not;
  EXPECT_EQ(d.output, "vgpu: prolog: job 42: created 1g.10gb\nfrom a child\n");
  EXPECT_EQ(seen, request());
}

TEST_F(HookService, NoPlannerListeningMeansTheHookWorksItselfSilently) {
  auto d = delegate_to_planner(path, request());
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "");
  {
    auto listener = HookListener::open(path);  // and a socket its planner left behind when it ended
    ASSERT_TRUE(listener);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(HookService, ADeclineSaysWhyAndRunsNothing) {
  auto listener = HookListener::open(path);
  ASSERT_TRUE(listener);
  auto client = std::async(std::launch::async, [&] { return delegate_to_planner(path, request()); });
  bool ran = false;
  wait_for_a_hook(*listener);
  (void)listener->serve_one([](const HookRequest&) { return std::optional<std::string>("policy /p changed"); },
                            [&](const HookRequest&) { ran = true; });
  auto d = client.get();
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "the planner declined: policy /p changed");
  EXPECT_FALSE(ran);
}

// The planner's routine decline (epilogs while this node's scrubs are slow): no line per job.
TEST_F(HookService, ADeclineWithoutAReasonRunsNothingAndSaysNothing) {
  auto listener = HookListener::open(path);
  ASSERT_TRUE(listener);
  auto client = std::async(std::launch::async, [&] { return delegate_to_planner(path, request()); });
  bool ran = false;
  wait_for_a_hook(*listener);
  (void)listener->serve_one([](const HookRequest&) { return std::optional<std::string>(""); },
                            [&](const HookRequest&) { ran = true; });
  auto d = client.get();
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "");
  EXPECT_FALSE(ran);
}

TEST_F(HookService, APlannerThatNeverTakesTheRequestIsGivenUpAfterTheTimeout) {
  auto listener = HookListener::open(path);  // listening, never accepting (stuck in a round)
  ASSERT_TRUE(listener);
  auto d = delegate_to_planner(path, request(), std::chrono::milliseconds(100));
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "the planner did not take the request within 100 ms");
  // It takes the connection later: the hook has gone, so the work is not done a second time.
  bool ran = false;
  std::string note = listener->serve_one([](const HookRequest&) { return std::optional<std::string>(); },
                                         [&](const HookRequest&) { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_EQ(note, "vgpu: planner: prolog: job 42: the hook stopped waiting before it was served; it does the work itself");
}

TEST_F(HookService, APlannerKilledMidWorkLeavesTheWorkToTheHook) {
  // A "planner" that takes the request, says serving, and dies (its end of the socket closes).
  sockaddr_un addr = unix_address(path);
  int srv = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(::bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(srv, 1), 0);
  std::thread planner([&] {
    int c = ::accept(srv, nullptr, nullptr);
    char buf[512];
    (void)::read(c, buf, sizeof buf);
    const std::string serving = "vgpu-hook/1 serving\n";
    (void)::write(c, serving.data(), serving.size());
    ::close(c);
  });
  auto d = delegate_to_planner(path, request());
  planner.join();
  ::close(srv);
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "the planner ended while serving (killed?)");
}

TEST_F(HookService, ARequestThatIsNotOneIsDeclinedWithTheReadersError) {
  auto listener = HookListener::open(path);
  ASSERT_TRUE(listener);
  std::thread hook([&] {
    sockaddr_un addr = unix_address(path);
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      const std::string bad = "vgpu-hook/1 prolog job=1 colour=red\n";
      (void)::write(s, bad.data(), bad.size());
      char buf[256];
      (void)::read(s, buf, sizeof buf);
    }
    ::close(s);
  });
  bool ran = false;
  wait_for_a_hook(*listener);
  std::string note = listener->serve_one([](const HookRequest&) { return std::optional<std::string>(); },
                                         [&](const HookRequest&) { ran = true; });
  hook.join();
  EXPECT_FALSE(ran);
  EXPECT_EQ(note, "hook request: unknown key 'colour'");
}

TEST_F(HookService, OffInTheEnvironmentMeansNeverAsked) {
  auto listener = HookListener::open(path);
  ASSERT_TRUE(listener);
  ::setenv("VGPU_HOOK_SERVICE", "off", 1);
  auto d = delegate_to_planner(path, request(), std::chrono::milliseconds(100));
  ::unsetenv("VGPU_HOOK_SERVICE");
  EXPECT_FALSE(d.served);
  EXPECT_EQ(d.why_not, "");
}

}  // namespace
}  // namespace vgpu::agent
