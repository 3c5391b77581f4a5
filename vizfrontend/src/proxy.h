// The node's websockify: one per node, shared by all sessions. One proxy means one port to
// tunnel or firewall, no per-session port allocation, and sessions come and go without
// restarting it (TokenFile re-reads the token directory on every connection). It is stopped
// when the last session ends so an idle node listens on nothing.
#pragma once

#include <string>

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

}  // namespace vgpu::viz
