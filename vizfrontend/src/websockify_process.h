// Running websockify as a detached child: what the node's shared proxy and the per-session
// OnDemand proxies have in common.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::viz {

// Whether something accepts TCP connections on address:port (IPv4).
bool port_accepts(const std::string& address, std::uint16_t port);

// fork + setsid + exec `args` (args[0] an absolute path) with stdout/stderr appended to `log_file`
// (0600). The new session makes its process group the child's pid, so stop_process_group can
// reach every per-connection handler websockify forks.
Result<pid_t> spawn_detached(const std::vector<std::string>& args, const std::string& log_file);

// How a websockify just spawned came up: listening on address:port, exited (bind failed, bad
// arguments; `status` is its wait status), or neither within 5 s.
enum class Startup { listening, exited, timed_out };
Startup wait_until_listening(pid_t pid, const std::string& address, std::uint16_t port, int& status);

// SIGTERM to the whole group, up to 5 s to go, then SIGKILL. A handler that outlived its parent
// would hold the listening socket: the port would accept connections nobody answers.
void stop_process_group(pid_t pid);

// Whether `pid` is still a websockify process (not a recycled pid).
bool is_websockify(pid_t pid);

}  // namespace vgpu::viz
