// The hook socket between a hook and its node's planner: a served hook gets the work's output and
// never runs it again; every way the planner can fail it (absent, declining, silent, killed
// mid-work) leaves the hook doing the work itself.
#include "hook_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>
#include <vector>

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
  EXPECT_EQ(note,
            "vgpu: planner: prolog: job 42: the hook stopped waiting before it was served; it does the work itself");
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

std::optional<std::string> no_decline(const HookRequest&) { return std::nullopt; }

// The planner's wait loop, one turn of it (planner_main.cpp's Waiter): wait for the listener and
// its pending connections, no later than the nearest deadline (100 ms at most here), then serve
// what is ready; every line it would log is appended to `notes`.
template <class Work>
void drive_once(HookListener& listener, std::vector<std::string>& notes, Work work) {
  std::vector<pollfd> fds;
  for (int fd : listener.wait_fds()) fds.push_back({fd, POLLIN, 0});
  long long timeout_ms = 100;
  if (auto due = listener.next_deadline())
    timeout_ms = std::clamp<long long>(
        std::chrono::ceil<std::chrono::milliseconds>(*due - std::chrono::steady_clock::now()).count(), 0, 100);
  (void)::poll(fds.data(), fds.size(), static_cast<int>(timeout_ms));
  for (auto& note : listener.serve_ready(no_decline, work)) notes.push_back(std::move(note));
}

// A client stuck (or hostile) between connecting and ending its line: half a request, then nothing.
int stuck_connection(const std::string& path) {
  sockaddr_un addr = unix_address(path);
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  const std::string half = "vgpu-hook/1 prolog job=";
  if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::write(s, half.data(), half.size()) != static_cast<ssize_t>(half.size())) {
    ::close(s);
    return -1;
  }
  return s;
}

std::size_t count(const std::vector<std::string>& notes, const std::string& note) {
  return static_cast<std::size_t>(std::count(notes.begin(), notes.end(), note));
}

constexpr const char* kNoLine = "hook socket: a connection sent no request line within 2 s";

// A suite of its own for the listener's handling of many connections (HookListener is also the
// class's name: TEST, not TEST_F, so the name is only the suite's).
struct SocketDir {
  SocketDir() : dir((fs::temp_directory_path() / ("vgpu-hooklisten-" + std::to_string(::getpid()))).string()) {
    fs::create_directories(dir);
  }
  ~SocketDir() { fs::remove_all(dir); }
  std::string dir;
  std::string path = dir + "/hook.sock";
};

TEST(HookListener, StuckClientsDoNotDelayAWellFormedRequest) {
  SocketDir where;
  auto listener = HookListener::open(where.path);
  ASSERT_TRUE(listener) << listener.error().message;
  std::vector<int> stuck;
  for (int i = 0; i < 20; ++i) {
    stuck.push_back(stuck_connection(where.path));
    ASSERT_GE(stuck.back(), 0);
  }
  const HookRequest request{HookKind::prolog, 42, "alice", 1000u, "infer", "1g.10gb:1", "/p", 1};
  auto client = std::async(std::launch::async, [&] { return delegate_to_planner(where.path, request); });
  std::vector<std::string> notes;
  bool ran = false;
  auto work = [&](const HookRequest&) { ran = true; };
  // As the planner would, until the hook has its answer and the stuck ones are dropped (20 s at
  // most: a listener that reads one connection at a time takes 2 s for each).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::optional<std::size_t> notes_when_answered;
  while (std::chrono::steady_clock::now() < give_up && count(notes, kNoLine) < stuck.size()) {
    if (!notes_when_answered && client.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
      notes_when_answered = notes.size();
    drive_once(*listener, notes, work);
  }
  const auto d = client.get();
  EXPECT_TRUE(d.served) << d.why_not;
  EXPECT_TRUE(ran);
  ASSERT_TRUE(notes_when_answered) << "the hook had no answer while the stuck connections were pending";
  EXPECT_EQ(count({notes.begin(), notes.begin() + static_cast<std::ptrdiff_t>(*notes_when_answered)}, kNoLine), 0u)
      << "the hook was answered only after a stuck connection was given up on";
  EXPECT_EQ(count(notes, kNoLine), stuck.size()) << "each stuck connection is dropped, with a line";
  for (int s : stuck) ::close(s);
}

// What the client of a connection the listener has closed sees: the end of the stream.
bool closed_by_the_listener(int s) {
  char c;
  return ::recv(s, &c, 1, MSG_DONTWAIT) == 0;
}

TEST(HookListener, AStuckConnectionIsDroppedAtItsDeadlineWithALogLine) {
  SocketDir where;
  auto listener = HookListener::open(where.path);
  ASSERT_TRUE(listener) << listener.error().message;
  const int s = stuck_connection(where.path);
  ASSERT_GE(s, 0);
  const auto connected = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  auto work = [](const HookRequest&) { ADD_FAILURE() << "half a line is never served"; };
  drive_once(*listener, notes, work);
  EXPECT_EQ(notes, std::vector<std::string>{});
  EXPECT_EQ(listener->wait_fds().size(), 2u) << "the listener and the stuck connection";
  const auto due = listener->next_deadline();
  ASSERT_TRUE(due);
  EXPECT_GE(*due, connected + kHookRequestTimeout);
  EXPECT_FALSE(closed_by_the_listener(s));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (notes.empty() && std::chrono::steady_clock::now() < give_up) drive_once(*listener, notes, work);
  EXPECT_GE(std::chrono::steady_clock::now(), *due) << "not dropped before its deadline";
  EXPECT_EQ(notes, std::vector<std::string>{kNoLine});
  EXPECT_TRUE(closed_by_the_listener(s));
  EXPECT_EQ(listener->wait_fds().size(), 1u);
  EXPECT_FALSE(listener->next_deadline());
  ::close(s);
}

// Over the cap the oldest pending connection is closed, not the new one: a full set of stuck
// clients cannot keep a hook out.
TEST(HookListener, PendingConnectionsAreCappedAndTheOldestClosedFirst) {
  SocketDir where;
  auto listener = HookListener::open(where.path);
  ASSERT_TRUE(listener) << listener.error().message;
  std::vector<int> stuck;
  std::vector<std::string> notes;
  auto work = [](const HookRequest&) {};
  for (std::size_t i = 0; i < kHookPendingMax; ++i) {
    stuck.push_back(stuck_connection(where.path));
    ASSERT_GE(stuck.back(), 0);
  }
  for (auto& note : listener->serve_ready(no_decline, work)) notes.push_back(note);
  EXPECT_EQ(notes, std::vector<std::string>{});
  EXPECT_EQ(listener->wait_fds().size(), kHookPendingMax + 1);
  stuck.push_back(stuck_connection(where.path));
  ASSERT_GE(stuck.back(), 0);
  for (auto& note : listener->serve_ready(no_decline, work)) notes.push_back(note);
  const std::string closed_one =
      "hook socket: closed 1 connection(s) that had sent no request line: more than 64 were waiting";
  EXPECT_EQ(notes, std::vector<std::string>{closed_one});
  EXPECT_EQ(listener->wait_fds().size(), kHookPendingMax + 1) << "never more than the cap";
  EXPECT_TRUE(closed_by_the_listener(stuck[0]));
  EXPECT_FALSE(closed_by_the_listener(stuck[1]));
  EXPECT_FALSE(closed_by_the_listener(stuck.back()));
  // A hook arriving at a full set is still served (the next oldest stuck one makes room).
  const HookRequest request{HookKind::epilog, 7, "", std::nullopt, "", "", "/p", 1};
  auto client = std::async(std::launch::async, [&] { return delegate_to_planner(where.path, request); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < give_up)
    drive_once(*listener, notes, work);
  const auto d = client.get();
  EXPECT_TRUE(d.served) << d.why_not;
  EXPECT_EQ(count(notes, closed_one), 2u);
  EXPECT_TRUE(closed_by_the_listener(stuck[1]));
  for (int s : stuck) ::close(s);
}

}  // namespace
}  // namespace vgpu::agent
