// The cluster view over TCP, for clusters without a shared file system: the publisher on the
// controller listens on kClusterViewPort and answers every connection with the latest signed view,
// then closes it; a planner connects, reads to the end and checks the signature. There is no
// request: what is sent is the same for every node, so a node's identity does not matter, and what
// makes it genuine is the signature, not the connection (view_signature.h).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "vgpu/base/error.h"

namespace vgpu::agent {

// The whole answer of the publisher at host:port, at most `max_bytes`, within `timeout` in all
// (connect and read: the planner serves its node's hooks between rounds and must not hang here).
Result<std::string> fetch_view(const std::string& host, int port, std::size_t max_bytes,
                               std::chrono::milliseconds timeout);

// The publisher's end: one thread that accepts, writes the latest text and closes; a client that
// does not read within a second is dropped (one slow node never holds the others up for long).
class ViewServer {
 public:
  // Listens on every IPv4 address at `port` (0: a free port, see port()).
  static Result<std::unique_ptr<ViewServer>> listen(int port);
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  void publish(std::string text);
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::uint64_t served() const { return served_.load(); }

 private:
  ViewServer(int fd, int port);
  void serve();

  int fd_;
  int port_;
  std::mutex mutex_;
  std::shared_ptr<const std::string> text_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> served_{0};
  std::thread thread_;
};

}  // namespace vgpu::agent
