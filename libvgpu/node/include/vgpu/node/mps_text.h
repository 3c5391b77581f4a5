// What the node says to, and reads from, an instance's CUDA MPS control daemon
// (nvidia-cuda-mps-control), and where that daemon lives. Pure text and paths: the adapter that
// runs the program is nodeagent/adapters/mps_control.cpp; the rules the limits follow are
// docs/shared-instances.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/shared_instance.h"

namespace vgpu {

// Where the node's MPS control daemons keep their pipes and logs: one directory per instance,
// root's, never writable by a job (a job that could replace the control pipe could keep the
// daemon from hearing `quit`).
inline constexpr std::string_view kDefaultMpsRoot = "/run/slurm-vgpu/mps";

struct MpsDirectories {
  std::string instance;  // <root>/<device uuid>
  std::string pipe;      // CUDA_MPS_PIPE_DIRECTORY: the daemon's control pipe, the servers' sockets
  std::string log;       // CUDA_MPS_LOG_DIRECTORY: control.log, server.log
};

// The directories of the daemon serving the device `device_uuid` ("MIG-<uuid>" for a MIG
// instance, "GPU-<uuid>" for a whole GPU). The uuid becomes a path component, so anything but
// those forms is refused with an error naming it.
Result<MpsDirectories> mps_directories(std::string_view root, std::string_view device_uuid);
// Whether `name` (a directory under the root) is a device uuid mps_directories would accept.
bool is_mps_device_name(std::string_view name);

// The commands sent to a freshly started daemon before any client connects, in order: each share's
// device memory cap and compute share become the defaults of every server it starts. The daemon
// sees only the instance (CUDA_VISIBLE_DEVICES), so the device index is 0.
std::vector<std::string> mps_default_commands(const ShareLimits& limits);

// Checks the daemon's reply to one of mps_default_commands: the percentage command answers with
// the value it set ("25.0"), the memory command with nothing. An error quotes the reply.
Result<void> check_mps_reply(std::string_view command, std::string_view reply);

// `get_server_list`: one server PID per line (none while no client has connected).
Result<std::vector<int>> parse_mps_server_list(std::string_view reply);

}  // namespace vgpu
