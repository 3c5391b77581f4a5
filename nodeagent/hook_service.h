// The planner serves the node's hooks (vgpu/contract/hook_request.h): a prolog or epilog that finds
// its node's planner listening hands it the job and waits, so the work runs in a process that
// already holds NVML, the policy and the adapters, with no fork of its own. When no planner
// listens, it declines, or it ends before answering (killed mid-work), the hook does the work
// itself as before: serving is an optimisation, never a dependency (docs/design.md).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "vgpu/base/error.h"
#include "vgpu/contract/hook_request.h"

namespace vgpu::agent {

// How long a hook waits for the planner to start its work before doing it itself: a round that
// asks Slurm (squeue, scontrol) holds the planner for that long, and a prolog must not wait on a
// busy slurmctld it has no business with; the planner serves hooks at a round's lock-free waits
// (NodeContext::serve_waiting_hooks). Once started, the hook waits for the end: the planner is then
// doing exactly what the hook would.
inline constexpr std::chrono::milliseconds kHookAckTimeout{1000};

struct Delegation {
  bool served = false;
  std::string output;   // served: what the work printed (the hook copies it to its stderr)
  std::string why_not;  // not served: why, or "" when no planner listens or it declined without a reason
};

// Client side. VGPU_HOOK_SERVICE=off in the hook's environment skips it (the crash-point matrix
// kills hook processes, which a served hook does not have).
Delegation delegate_to_planner(const std::string& socket_path, const contract::HookRequest& request,
                               std::chrono::milliseconds ack_timeout = kHookAckTimeout);
bool hook_service_enabled();

// Server side: the planner's listening socket, 0600, removed again when destroyed.
class HookListener {
 public:
  static Result<HookListener> open(const std::string& path);
  HookListener(HookListener&& other) noexcept;
  HookListener& operator=(HookListener&&) = delete;
  HookListener(const HookListener&) = delete;
  ~HookListener();
  int fd() const { return fd_; }

  // Why the planner will not serve `request` (none when it will): the hook then does the work, and
  // says why in its log unless the reason is empty (a routine decline, not worth a line per job).
  using Decline = std::function<std::optional<std::string>(const contract::HookRequest&)>;
  using Work = std::function<void(const contract::HookRequest&)>;
  // Accepts one connection (call when fd() is readable) and serves it: `work` runs here with
  // stderr captured for the hook. Never throws; returns a line for the planner's log, or "".
  std::string serve_one(const Decline& decline, const Work& work) const;

 private:
  HookListener(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace vgpu::agent
