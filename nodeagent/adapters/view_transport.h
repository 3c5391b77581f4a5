// The cluster view over TCP, for clusters without a shared file system: the publisher on the
// controller listens on kClusterViewPort; a planner connects, sends one line naming its node,
//
//   node n17
//
// reads the answer to the end and checks its signature; the publisher closes the connection after
// it. The answer is that node's own view (`for n17`, contract/cluster_view.h), so what the
// publisher sends grows with the nodes, not with their square. A client that names no node within
// kRequestWait (a planner of the release before) is sent the whole view. The node's name is a
// request, not a credential: the signature makes an answer genuine and names the node it is for
// (view_signature.h); anyone may read any node's view, as anyone may run `scontrol show node`.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "vgpu/base/error.h"

namespace vgpu::agent {

inline constexpr std::chrono::milliseconds kRequestWait{200};
inline constexpr std::size_t kMaxRequestBytes = 300;

// The whole answer of the publisher at host:port for `node` ("" asks for the whole view), at most
// `max_bytes`, within `timeout` in all (connect, request and read: the planner serves its node's
// hooks between rounds and must not hang here).
Result<std::string> fetch_view(const std::string& host, int port, const std::string& node, std::size_t max_bytes,
                               std::chrono::milliseconds timeout);

// What the publisher answers in one period: `node`'s own view, or the whole one for "". Asked by
// the server's one thread only; null when there is nothing to send (the client reads "no view").
class ViewAnswers {
 public:
  virtual ~ViewAnswers() = default;
  virtual std::shared_ptr<const std::string> answer(const std::string& node) = 0;
};

// The publisher's end: one thread that accepts, reads the request, writes the answer and closes; a
// client that does not ask or read within a second is dropped (one slow node never holds the
// others up for long).
class ViewServer {
 public:
  // Listens on every IPv4 address at `port` (0: a free port, see port()).
  static Result<std::unique_ptr<ViewServer>> listen(int port);
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  void publish(std::shared_ptr<ViewAnswers> answers);
  // The same text for every node and for the whole view (a test's publisher).
  void publish(std::string text);
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::uint64_t served() const { return served_.load(); }

 private:
  ViewServer(int fd, int port);
  void serve();

  int fd_;
  int port_;
  std::mutex mutex_;
  std::shared_ptr<ViewAnswers> answers_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> served_{0};
  std::thread thread_;
};

}  // namespace vgpu::agent
