// The planner serves the node's hooks (vgpu/contract/hook_request.h): a prolog or epilog that finds
// its node's planner listening hands it the job and waits, so the work runs in a process that
// already holds NVML, the policy and the adapters, with no fork of its own. When no planner
// listens, it declines, or it ends before answering (killed mid-work), the hook does the work
// itself, as without a planner: serving is an optimisation, never a dependency (docs/design.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

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

// How long a connection may take, from its accept, to send its request line (a hook sends it at
// once), and how many connections may be waiting to; the oldest of them is closed to make room.
inline constexpr std::chrono::milliseconds kHookRequestTimeout{2000};
inline constexpr std::size_t kHookPendingMax = 64;

// Server side: the planner's listening socket, 0600, removed again when destroyed.
// Only the reading of request lines is concurrent: the listener holds every connection that has
// not yet sent its line, each with its own buffer and deadline, and reads what each has sent
// without blocking, so a client stuck (or hostile) after connecting never delays another. The
// work itself stays sequential in the caller's thread: one served hook at a time, by design (it
// captures the process's stderr). Not thread-safe; the planner uses it from its one thread.
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

  // Never blocks on a client: accepts every connection waiting, reads what each pending one has
  // sent, and serves those whose line is complete, in the order they connected (`work` runs here
  // with stderr captured for the hook); drops those that closed, sent too much, or are past their
  // deadline. Goes round again while that served someone, since hooks may have come meanwhile.
  // Never throws; returns the lines for the planner's log, one per connection at most.
  std::vector<std::string> serve_ready(const Decline& decline, const Work& work);
  // What to poll (POLLIN) for serve_ready: fd() first, then each pending connection.
  std::vector<int> wait_fds() const;
  // When serve_ready must run next even if no fd wakes (the nearest deadline of a pending
  // connection, so a stuck one is dropped on time); none while nothing is pending.
  std::optional<std::chrono::steady_clock::time_point> next_deadline() const;

  // For a caller handing over a single hook (tests): serve_ready until a connection has been
  // dealt with (served, declined or dropped), waiting on the pending ones meanwhile (at most until
  // their deadlines), or none was waiting. Returns its lines joined by newlines, or "".
  std::string serve_one(const Decline& decline, const Work& work);

 private:
  struct Pending;  // a connection whose request line is not yet complete (hook_socket.cpp)
  HookListener(int fd, std::string path);
  // One turn: read, drop, accept, serve; `notes` gets the log lines; returns how many connections
  // it dealt with and, in `served`, how many reached decline/work.
  std::size_t turn(const Decline& decline, const Work& work, std::vector<std::string>& notes, std::size_t& served);
  int fd_ = -1;
  std::string path_;
  std::vector<Pending> pending_;  // in the order accepted
  bool busy_ = false;             // inside serve_ready: a work that serves hooks itself gets nothing
};

}  // namespace vgpu::agent
