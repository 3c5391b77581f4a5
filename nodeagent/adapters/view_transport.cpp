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

}  // namespace

Result<std::string> fetch_view(const std::string& host, int port, std::size_t max_bytes,
                               std::chrono::milliseconds timeout) {
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

void ViewServer::publish(std::string text) {
  auto shared = std::make_shared<const std::string>(std::move(text));
  std::lock_guard lock(mutex_);
  text_ = std::move(shared);
}

void ViewServer::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 500) <= 0) continue;
    Fd client{::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)};
    if (client.fd < 0) continue;
    std::shared_ptr<const std::string> text;
    {
      std::lock_guard lock(mutex_);
      text = text_;
    }
    if (!text) continue;  // nothing taken yet: the node reads "no view" from the empty answer
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    std::size_t sent = 0;
    while (sent < text->size() && wait_for(client.fd, POLLOUT, deadline)) {
      const ssize_t n = ::send(client.fd, text->data() + sent, text->size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EINTR && errno != EAGAIN) break;
      if (n > 0) sent += static_cast<std::size_t>(n);
    }
    if (sent == text->size()) ++served_;
  }
}

}  // namespace vgpu::agent
