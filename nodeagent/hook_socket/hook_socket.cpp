#include "hook_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

namespace vgpu::agent {
namespace {

using Clock = std::chrono::steady_clock;
using contract::HookAnswer;
using contract::HookReply;

bool fill_address(const std::string& path, sockaddr_un& addr) {
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads from a socket into `buffer` until it holds a newline; the line (newline included) is taken
// off the buffer. nullopt at end of stream, on an error, past `limit` bytes, or at `deadline`.
std::optional<std::string> read_line(int fd, std::string& buffer, std::size_t limit,
                                     std::optional<Clock::time_point> deadline) {
  while (true) {
    if (auto eol = buffer.find('\n'); eol != std::string::npos) {
      std::string line = buffer.substr(0, eol + 1);
      buffer.erase(0, eol + 1);
      return line;
    }
    if (buffer.size() >= limit) return std::nullopt;
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      timeout_ms = static_cast<int>(left);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[1024];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

bool peer_is_trusted(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return cred.uid == 0 || cred.uid == ::geteuid();
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Runs `work` with this process's stderr (fd 2, so also that of the children it starts) going to
// a memory file, and returns what was written there, at most kHookOutputMax bytes.
std::string capture_stderr(const std::function<void()>& work) {
  std::fflush(stderr);
  const int mem = ::memfd_create("vgpu-hook-output", MFD_CLOEXEC);
  const int saved = mem >= 0 ? ::fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;
  if (saved < 0 || ::dup2(mem, 2) < 0) {  // cannot capture: the work still runs, its lines stay here
    if (saved >= 0) ::close(saved);
    if (mem >= 0) ::close(mem);
    work();
    return {};
  }
  work();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  const off_t size = ::lseek(mem, 0, SEEK_END);
  if (size > 0) {
    const std::string cut = "\n[vgpu: planner: output cut]\n";
    const std::size_t keep = static_cast<std::size_t>(size) > contract::kHookOutputMax
                                 ? contract::kHookOutputMax - cut.size()
                                 : static_cast<std::size_t>(size);
    out.resize(keep);
    const ssize_t n = ::pread(mem, out.data(), keep, 0);
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    if (keep < static_cast<std::size_t>(size)) out += cut;
  }
  ::close(mem);
  return out;
}

std::string left_early(const contract::HookRequest& r) {
  return "vgpu: planner: " + std::string(contract::hook_kind_name(r.kind)) + ": job " + std::to_string(r.job) +
         ": the hook stopped waiting before it was served; it does the work itself";
}

}  // namespace

bool hook_service_enabled() {
  const char* v = std::getenv("VGPU_HOOK_SERVICE");
  return !(v && std::strcmp(v, "off") == 0);
}

Delegation delegate_to_planner(const std::string& socket_path, const contract::HookRequest& request,
                               std::chrono::milliseconds ack_timeout) {
  Delegation d;
  if (!hook_service_enabled()) return d;
  auto line = contract::encode_hook_request(request);
  if (!line) {
    d.why_not = line.error().message;
    return d;
  }
  sockaddr_un addr{};
  if (!fill_address(socket_path, addr)) {
    d.why_not = "planner socket " + socket_path + ": path too long for a socket";
    return d;
  }
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) return d;
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return d;  // no planner
  if (!peer_is_trusted(sock.get())) {
    d.why_not = "planner socket " + socket_path + ": served by neither root nor this user; not used";
    return d;
  }
  if (!send_all(sock.get(), *line)) {
    d.why_not = "planner socket " + socket_path + ": the request could not be sent";
    return d;
  }
  std::string buffer;
  auto ack = read_line(sock.get(), buffer, 1024, Clock::now() + ack_timeout);
  if (!ack) {
    d.why_not = "the planner did not take the request within " + std::to_string(ack_timeout.count()) + " ms";
    return d;
  }
  auto reply = contract::decode_hook_reply(*ack);
  if (reply && reply->answer == HookAnswer::declined) {
    if (!reply->why.empty()) d.why_not = "the planner declined: " + reply->why;
    return d;
  }
  if (!reply || reply->answer != HookAnswer::serving) {
    d.why_not = reply ? "the planner answered 'done' before 'serving'" : reply.error().message;
    return d;
  }
  auto end = read_line(sock.get(), buffer, 1024, std::nullopt);  // as long as the work takes
  if (!end) {
    d.why_not = "the planner ended while serving (killed?)";
    return d;
  }
  auto done = contract::decode_hook_reply(*end);
  if (!done || done->answer != HookAnswer::done) {
    d.why_not = done ? "the planner did not answer 'done'" : done.error().message;
    return d;
  }
  // The work is done whatever happens to its output now: never run it a second time for that.
  d.served = true;
  d.output = std::move(buffer);
  while (d.output.size() < done->output_bytes) {
    char chunk[4096];
    const ssize_t n = ::recv(sock.get(), chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    d.output.append(chunk, static_cast<std::size_t>(n));
  }
  if (d.output.size() > done->output_bytes) d.output.resize(done->output_bytes);
  return d;
}

Result<HookListener> HookListener::open(const std::string& path) {
  sockaddr_un addr{};
  if (!fill_address(path, addr))
    return fail(ErrorCode::invalid_argument, "hook socket " + path + ": path too long for a socket");
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (sock.get() < 0) return fail(ErrorCode::io, "hook socket " + path + ": socket: " + std::strerror(errno));
  // A socket file left by a planner that was killed; only a planner of this node binds here.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return fail(ErrorCode::io, "hook socket " + path + ": cannot remove the old one: " + std::strerror(errno));
  const mode_t old = ::umask(0177);  // 0600 from the start: no moment where others may connect
  const int bound = ::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old);
  if (bound != 0) return fail(ErrorCode::io, "hook socket " + path + ": bind: " + std::strerror(bind_errno));
  if (::listen(sock.get(), 64) != 0) {
    const int e = errno;
    ::unlink(path.c_str());
    return fail(ErrorCode::io, "hook socket " + path + ": listen: " + std::strerror(e));
  }
  return HookListener(sock.release(), path);
}

// A connection accepted and not yet served: what it has sent so far, and until when it may send
// the rest of its line. Owns its descriptor.
struct HookListener::Pending {
  enum class State { reading, complete, failed };
  Pending(int f, Clock::time_point d) : fd(f), deadline(d) {}
  Pending(Pending&& o) noexcept
      : fd(std::exchange(o.fd, -1)),
        deadline(o.deadline),
        buffer(std::move(o.buffer)),
        state(o.state),
        why(std::move(o.why)) {}
  Pending& operator=(Pending&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = std::exchange(o.fd, -1);
      deadline = o.deadline;
      buffer = std::move(o.buffer);
      state = o.state;
      why = std::move(o.why);
    }
    return *this;
  }
  ~Pending() {
    if (fd >= 0) ::close(fd);
  }

  // Takes what the peer has sent, never waiting: the line ends at the first newline, anything
  // after it is ignored; no newline within kHookRequestMax bytes, an error or the end fails it.
  void read_ready() {
    while (state == State::reading) {
      char chunk[1024];
      const std::size_t room = std::min(sizeof chunk, contract::kHookRequestMax - buffer.size());
      const ssize_t n = ::recv(fd, chunk, room, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0) return fail(std::string("hook socket: reading a request: ") + std::strerror(errno));
      if (n == 0) return fail("hook socket: a connection closed before it sent a request line");
      const std::size_t old_size = buffer.size();
      buffer.append(chunk, static_cast<std::size_t>(n));
      if (auto eol = buffer.find('\n', old_size); eol != std::string::npos) {
        buffer.resize(eol + 1);
        state = State::complete;
      } else if (buffer.size() >= contract::kHookRequestMax) {
        fail("hook socket: a connection sent " + std::to_string(buffer.size()) + " bytes without a newline");
      }
    }
  }
  void fail(std::string reason) {
    state = State::failed;
    why = std::move(reason);
  }

  int fd;
  Clock::time_point deadline;
  std::string buffer;
  State state = State::reading;
  std::string why;  // failed: the line for the log
};

HookListener::HookListener(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

HookListener::HookListener(HookListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), pending_(std::move(other.pending_)) {}

HookListener::~HookListener() {
  pending_.clear();
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(path_.c_str());
}

std::vector<int> HookListener::wait_fds() const {
  std::vector<int> fds{fd_};
  for (const auto& p : pending_) fds.push_back(p.fd);
  return fds;
}

std::optional<Clock::time_point> HookListener::next_deadline() const {
  std::optional<Clock::time_point> next;
  const auto now = Clock::now();
  for (const auto& p : pending_) {
    // Not reading any more (only left so by a turn cut short by an exception): due now.
    const auto due = p.state == Pending::State::reading ? p.deadline : now;
    if (!next || due < *next) next = due;
  }
  return next;
}

namespace {

// Serves one connection whose request line is complete: `work` runs here, its stderr captured.
std::string serve_connection(int conn, const std::string& line, const HookListener::Decline& decline,
                             const HookListener::Work& work) {
  auto request = contract::decode_hook_request(line);
  if (!request) {
    (void)send_all(conn, contract::encode_hook_reply({HookAnswer::declined, 0, request.error().message}));
    return request.error().message;
  }
  if (auto why = decline(*request)) {
    (void)send_all(conn, contract::encode_hook_reply({HookAnswer::declined, 0, *why}));
    return {};
  }
  // A hook that gave up waiting has closed its end: its work is its own now, never done twice.
  pollfd p{conn, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return left_early(*request);
  if (!send_all(conn, contract::encode_hook_reply({HookAnswer::serving, 0, ""}))) return left_early(*request);
  std::string output = capture_stderr([&] {
    try {
      work(*request);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vgpu: %s: job %u: unexpected: %s\n",
                   std::string(contract::hook_kind_name(request->kind)).c_str(), request->job, e.what());
    }
  });
  (void)send_all(conn, contract::encode_hook_reply({HookAnswer::done, output.size(), ""}) + output);
  return {};
}

}  // namespace

std::size_t HookListener::turn(const Decline& decline, const Work& work, std::vector<std::string>& notes,
                               std::size_t& served) {
  std::size_t dealt = 0;
  // What the pending ones sent, then those that will not send a line: read first, so a line that
  // came while a work ran is taken even when its deadline passed meanwhile.
  const auto now = Clock::now();
  for (auto& p : pending_) p.read_ready();
  std::erase_if(pending_, [&](Pending& p) {
    if (p.state == Pending::State::reading && now >= p.deadline)
      p.fail("hook socket: a connection sent no request line within " +
             std::to_string(kHookRequestTimeout.count() / 1000) + " s");
    if (p.state != Pending::State::failed) return false;
    notes.push_back(std::move(p.why));
    ++dealt;
    return true;
  });
  // Every connection waiting, each read at once (a hook sends its line as it connects). Beyond
  // the cap the oldest still reading is closed: it has had the longest to send its line, and
  // refusing new ones instead would let a few stuck clients keep every hook out.
  std::size_t evicted = 0;
  for (std::size_t accepted = 0; accepted < 2 * kHookPendingMax; ++accepted) {
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) break;  // EAGAIN: none left (or another wakeup took it, or the hook gave up)
    Pending p(conn, Clock::now() + kHookRequestTimeout);
    if (!peer_is_trusted(conn)) {
      notes.push_back("hook socket: refused a connection from neither root nor the planner's user");
      ++dealt;
      continue;
    }
    p.read_ready();
    if (pending_.size() >= kHookPendingMax) {
      auto oldest = std::find_if(pending_.begin(), pending_.end(),
                                 [](const Pending& q) { return q.state == Pending::State::reading; });
      if (oldest != pending_.end()) {
        pending_.erase(oldest);
        ++evicted;
        ++dealt;
      }
    }
    pending_.push_back(std::move(p));
  }
  if (evicted > 0)
    notes.push_back("hook socket: closed " + std::to_string(evicted) +
                    " connection(s) that had sent no request line: more than " + std::to_string(kHookPendingMax) +
                    " were waiting");
  // Those with a complete line, in the order they connected; one that failed meanwhile is
  // dropped with its line.
  for (std::size_t i = 0; i < pending_.size();) {
    if (pending_[i].state == Pending::State::reading) {
      ++i;
      continue;
    }
    Pending p = std::move(pending_[i]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    ++dealt;
    if (p.state == Pending::State::failed) {
      notes.push_back(std::move(p.why));
      continue;
    }
    ++served;
    if (auto note = serve_connection(p.fd, p.buffer, decline, work); !note.empty()) notes.push_back(std::move(note));
  }
  return dealt;
}

std::vector<std::string> HookListener::serve_ready(const Decline& decline, const Work& work) {
  std::vector<std::string> notes;
  if (busy_) return notes;  // a work serving hooks itself: the one serving them goes on afterwards
  busy_ = true;
  try {
    // Another turn while one served someone (hooks may have come meanwhile), a bounded number.
    for (int turns = 0; turns < 4; ++turns) {
      std::size_t served = 0;
      (void)turn(decline, work, notes, served);
      if (served == 0) break;
    }
  } catch (const std::exception& e) {
    notes.push_back(std::string("hook socket: unexpected: ") + e.what());
  }
  busy_ = false;
  return notes;
}

std::string HookListener::serve_one(const Decline& decline, const Work& work) {
  if (busy_) return {};
  std::vector<std::string> notes;
  busy_ = true;
  try {
    while (true) {
      std::size_t served = 0;
      if (turn(decline, work, notes, served) > 0 || pending_.empty()) break;
      std::vector<pollfd> fds;
      for (int fd : wait_fds()) fds.push_back({fd, POLLIN, 0});
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next_deadline() - Clock::now()).count();
      (void)::poll(fds.data(), fds.size(),
                   static_cast<int>(std::clamp<long long>(left, 0, kHookRequestTimeout.count())));
    }
  } catch (const std::exception& e) {
    notes.push_back(std::string("hook socket: unexpected: ") + e.what());
  }
  busy_ = false;
  std::string joined;
  for (const auto& n : notes) joined += (joined.empty() ? "" : "\n") + n;
  return joined;
}

}  // namespace vgpu::agent
