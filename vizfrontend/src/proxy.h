// The node's websockify: one per node, shared by all sessions. One proxy means one port to
// tunnel or firewall, no per-session port allocation, and sessions come and go without
// restarting it (TokenFile re-reads the token directory on every connection). It is stopped
// when the last session ends so an idle node listens on nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/base/error.h"
#include "viz_config.h"

namespace vgpu::viz {

class Proxy {
 public:
  virtual ~Proxy() = default;
  virtual Result<void> ensure_running() = 0;
  virtual Result<void> stop() = 0;
};

// websockify --web state_dir/web (web_root.h) --token-plugin TokenFile --token-source <token dir> listen:port; each
// token's target is "unix_socket:<the domain's VNC socket>". Daemonised, pid in
// state_dir/websockify.pid, output in state_dir/websockify.log.
class WebsockifyProxy final : public Proxy {
 public:
  WebsockifyProxy(const VizConfig& config, std::string token_source);
  Result<void> ensure_running() override;
  Result<void> stop() override;

 private:
  int running_pid() const;
  const VizConfig& config_;
  std::string token_source_;
  std::string pid_file_;
  std::string log_file_;
  std::string web_root_;
};

// One websockify per session, for Open OnDemand: its proxy reaches a session at
// <host>:<port>/websockify and has no room for our token, so each session gets a port of its own
// on VizConfig::ood_listen_address that leads to its VNC socket alone. Only the VNC password
// guards it (docs/viz.md, security model).
class SessionProxy {
 public:
  virtual ~SessionProxy() = default;
  // Starts the job's proxy to `vnc_socket` and returns its port.
  virtual Result<std::uint16_t> start(std::uint32_t job_id, const std::string& vnc_socket) = 0;
  // Stops the job's proxy; succeeds when there is none.
  virtual Result<void> stop(std::uint32_t job_id) = 0;
  virtual std::optional<std::uint16_t> port(std::uint32_t job_id) const = 0;
  // Jobs with a recorded proxy (reap looks for leftovers there too).
  virtual std::vector<std::uint32_t> jobs() const = 0;
};

// state_dir/ood/<job> holds "<pid> <port>"; state_dir/ood/<job>.log its output. Serves the same web
// root as the node's proxy, so the session page works on that port as well.
class WebsockifySessionProxy final : public SessionProxy {
 public:
  explicit WebsockifySessionProxy(const VizConfig& config);
  Result<std::uint16_t> start(std::uint32_t job_id, const std::string& vnc_socket) override;
  Result<void> stop(std::uint32_t job_id) override;
  std::optional<std::uint16_t> port(std::uint32_t job_id) const override;
  std::vector<std::uint32_t> jobs() const override;

 private:
  std::string dir() const;
  std::string state_path(std::uint32_t job_id) const;
  const VizConfig& config_;
};

}  // namespace vgpu::viz
