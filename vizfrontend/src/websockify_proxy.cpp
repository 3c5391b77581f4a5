#include <signal.h>

#include <fmt/format.h>

#include "file_util.h"
#include "proxy.h"
#include "websockify_process.h"
#include "web_root.h"

namespace vgpu::viz {

WebsockifyProxy::WebsockifyProxy(const VizConfig& config, std::string token_source)
    : config_(config),
      token_source_(std::move(token_source)),
      pid_file_(config.state_dir + "/websockify.pid"),
      log_file_(config.state_dir + "/websockify.log"),
      web_root_(config.state_dir + "/web") {}

int WebsockifyProxy::running_pid() const {
  auto text = read_file(pid_file_);
  if (!text) return 0;
  const int pid = std::atoi(text->c_str());
  return is_websockify(pid) ? pid : 0;
}

Result<void> WebsockifyProxy::ensure_running() {
  if (running_pid() > 0) return {};
  if (port_accepts(config_.listen_address, config_.proxy_port)) {
    return fail(ErrorCode::conflict, fmt::format("websockify: {}:{} is already in use by another program",
                                                 config_.listen_address, config_.proxy_port));
  }
  if (auto web = prepare_web_root(web_root_, config_.novnc_dir); !web)
    return std::unexpected(web.error().within("websockify"));
  const std::string listen = fmt::format("{}:{}", config_.listen_address, config_.proxy_port);
  std::vector<std::string> args{config_.websockify, "--web",          web_root_,     "--token-plugin",
                                "TokenFile",        "--token-source", token_source_, listen};
  auto spawned = spawn_detached(args, log_file_);
  if (!spawned) return std::unexpected(spawned.error());
  const pid_t child = *spawned;
  if (auto w = write_file_atomic(pid_file_, config_.state_dir, fmt::format("{}\n", child), 0644); !w) {
    ::kill(child, SIGTERM);
    return std::unexpected(w.error().within("websockify"));
  }
  int status = 0;
  switch (wait_until_listening(child, config_.listen_address, config_.proxy_port, status)) {
    case Startup::listening: return {};
    case Startup::exited:
      (void)remove_file(pid_file_);
      return fail(ErrorCode::unavailable,
                  fmt::format("websockify exited at start-up (status {}); see {}", status, log_file_));
    case Startup::timed_out: break;
  }
  ::kill(child, SIGTERM);
  (void)remove_file(pid_file_);
  return fail(ErrorCode::unavailable,
              fmt::format("websockify did not listen on {} within 5 s; see {}", listen, log_file_));
}

Result<void> WebsockifyProxy::stop() {
  if (const int pid = running_pid(); pid > 0) stop_process_group(pid);
  return remove_file(pid_file_);
}

}  // namespace vgpu::viz
