#include "view_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "vgpu/contract/cluster_view.h"

namespace vgpu::agent {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Writes all of `text` before `deadline`; false when the peer is gone or too slow.
bool send_all(int fd, std::string_view text, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < text.size() && wait_for(fd, POLLOUT, deadline)) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return false;
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  return sent == text.size();
}

// The node a client names ("node n1\n"); "" where it sends nothing within kRequestWait or
// closes its end first; nullopt for anything else, which is not answered.
std::optional<std::string> read_request(int fd) {
  const auto deadline = Clock::now() + kRequestWait;
  std::string line;
  char buf[kMaxRequestBytes];
  while (line.find('\n') == std::string::npos) {
    if (line.size() >= kMaxRequestBytes) return std::nullopt;
    if (!wait_for(fd, POLLIN, deadline)) return line.empty() ? std::optional<std::string>("") : std::nullopt;
    const ssize_t n = ::read(fd, buf, kMaxRequestBytes - line.size());
    if (n == 0) return line.empty() ? std::optional<std::string>("") : std::nullopt;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::nullopt;
    }
    line.append(buf, static_cast<std::size_t>(n));
  }
  constexpr std::string_view key = "node ";
  const auto request = std::string_view(line).substr(0, line.find('\n'));
  if (!request.starts_with(key) || !contract::is_view_node_name(request.substr(key.size()))) return std::nullopt;
  return std::string(request.substr(key.size()));
}

// The same text for every question.
class FixedAnswers final : public ViewAnswers {
 public:
  explicit FixedAnswers(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}
  std::shared_ptr<const std::string> answer(const std::string&) override { return text_; }

 private:
  std::shared_ptr<const std::string> text_;
};

}  // namespace

Result<std::string> fetch_view(const std::string& host, int port, const std::string& node, std::size_t max_bytes,
                               std::chrono::milliseconds timeout) {
  if (!node.empty() && !contract::is_view_node_name(node))
    return fail(ErrorCode::invalid_argument, fmt::format("cluster view: \"{}\" is not a node name", node));
  const auto where = fmt::format("cluster view from {}:{}", host, port);
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return fail(ErrorCode::unavailable, fmt::format("{}: {}", where, ::gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  std::string last_error = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd sock{::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol)};
    if (sock.fd < 0) continue;
    if (::connect(sock.fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = std::strerror(errno);
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (!wait_for(sock.fd, POLLOUT, deadline) || ::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
        err != 0) {
      last_error = err ? std::strerror(err) : "connect timed out";
      continue;
    }
    if (!node.empty() && !send_all(sock.fd, "node " + node + "\n", deadline))
      return fail(ErrorCode::unavailable, fmt::format("{}: the request for node {} could not be sent", where, node));
    std::string text;
    char buf[65536];
    while (true) {
      if (!wait_for(sock.fd, POLLIN, deadline))
        return fail(ErrorCode::unavailable, fmt::format("{}: timed out after {} bytes", where, text.size()));
      const ssize_t n = ::read(sock.fd, buf, sizeof buf);
      if (n == 0) return text;
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return fail(ErrorCode::unavailable, fmt::format("{}: {}", where, std::strerror(errno)));
      }
      if (text.size() + static_cast<std::size_t>(n) > max_bytes)
        return fail(ErrorCode::unavailable, fmt::format("{}: refused: over the {} byte limit", where, max_bytes));
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  return fail(ErrorCode::unavailable, fmt::format("{}: {}", where, last_error));
}

Result<std::unique_ptr<ViewServer>> ViewServer::listen(int port) {
  Fd sock{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return fail(ErrorCode::io, fmt::format("cluster view server: socket: {}", std::strerror(errno)));
  const int on = 1;
  ::setsockopt(sock.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(sock.fd, 512) != 0)
    return fail(ErrorCode::unavailable, fmt::format("cluster view server: port {}: {}", port, std::strerror(errno)));
  socklen_t len = sizeof addr;
  ::getsockname(sock.fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<ViewServer> server(new ViewServer(sock.fd, ntohs(addr.sin_port)));
  sock.fd = -1;
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

ViewServer::ViewServer(int fd, int port) : fd_(fd), port_(port) {}

ViewServer::~ViewServer() {
  stop_ = true;
  ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void ViewServer::publish(std::shared_ptr<ViewAnswers> answers) {
  std::lock_guard lock(mutex_);
  answers_ = std::move(answers);
}

void ViewServer::publish(std::string text) { publish(std::make_shared<FixedAnswers>(std::move(text))); }

void ViewServer::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 500) <= 0) continue;
    Fd client{::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)};
    if (client.fd < 0) continue;
    const auto node = read_request(client.fd);
    if (!node) continue;
    std::shared_ptr<ViewAnswers> answers;
    {
      std::lock_guard lock(mutex_);
      answers = answers_;
    }
    // Nothing taken yet: the node reads "no view" from the empty answer.
    const auto text = answers ? answers->answer(*node) : nullptr;
    if (text && send_all(client.fd, *text, Clock::now() + std::chrono::seconds(1))) ++served_;
  }
}

}  // namespace vgpu::agent
