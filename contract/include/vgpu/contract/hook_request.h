// What a hook hands the node's resident planner (nodeagent/hook_socket/hook_socket.h): one request line over
// the node's root-only socket, answered by "serving" when the planner starts the work, then
// "done" with what the work printed, or "declined" when the hook must do the work itself.
// The planner already holds NVML, the policy and the node's adapters, so a served hook starts
// none of them (on a real H100 node NVML alone costs 23-59 ms a process: docs/benchmarks.md).
//
//   vgpu-hook/1 prolog job=42 user=alice uid=1000 partition=infer alloc=1g.10gb:2 policy=/etc/... since=123
//   vgpu-hook/1 serving
//   vgpu-hook/1 done 57          (then 57 bytes: the work's stderr, for slurmd's log)
//   vgpu-hook/1 declined <why>
//
// Values are single tokens (no blank or control character); a value the encoder cannot carry
// makes the hook do the work itself, never a truncated request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"

namespace vgpu::contract {

inline constexpr std::string_view kHookProtocol = "vgpu-hook/1";
inline constexpr std::size_t kHookRequestMax = 4096;  // one line, newline included
inline constexpr std::size_t kHookOutputMax = 64 * 1024;

enum class HookKind { prolog, epilog };
std::string_view hook_kind_name(HookKind kind);

struct HookRequest {
  HookKind kind = HookKind::prolog;
  JobId job = 0;
  std::string user;             // SLURM_JOB_USER ("" when slurmd gave none)
  std::optional<unsigned> uid;  // SLURM_JOB_UID; none is written "-"
  std::string partition;        // SLURM_JOB_PARTITION
  std::string alloc;            // VGPU_ALLOC (prolog), "" for the epilog
  std::string policy;           // the policy file the hook would have read: the planner serves only its own
  std::int64_t since_ns = 0;    // CLOCK_MONOTONIC when the hook started, for the hook tally's duration
  bool operator==(const HookRequest&) const = default;
};

// The request line, newline included; invalid_argument naming the field when a value cannot be
// carried (blank, control character, too long).
Result<std::string> encode_hook_request(const HookRequest& request);
// The one strict reader: the protocol word, a known kind, every key exactly once, nothing else.
Result<HookRequest> decode_hook_request(std::string_view line);

enum class HookAnswer { serving, done, declined };
struct HookReply {
  HookAnswer answer = HookAnswer::serving;
  std::size_t output_bytes = 0;  // done: how many bytes of output follow the line
  std::string why;               // declined: the reason
};
std::string encode_hook_reply(const HookReply& reply);
Result<HookReply> decode_hook_reply(std::string_view line);

// The one builder of a hook request from slurmd's environment, for the front end (vgpu-prolog,
// vgpu-epilog) and the work programs alike:
//   SLURM_JOB_ID          job (parse_job_id, node_files.h); none when it is not a job id
//   SLURM_JOB_USER        user                        } the prolog's only: an epilog's
//   SLURM_JOB_UID         uid (parse_job_uid)         } request carries none of them
//   SLURM_JOB_PARTITION   partition                   }
//   VGPU_ALLOC            alloc (set by gres/vgpu)    }
//   VGPU_POLICY           policy (resolve_policy_path, node_files.h)
// `since_ns` is when the hook started (CLOCK_MONOTONIC). `env` answers as getenv(3) does.
using EnvLookup = std::function<const char*(const char*)>;
std::optional<HookRequest> hook_request_from_env(HookKind kind, const EnvLookup& env, std::int64_t since_ns);
// SLURM_JOB_UID, whole and decimal; anything else is no uid (the prolog then refuses the job on a
// node that confines instances).
std::optional<unsigned> parse_job_uid(std::string_view text);

// <state dir>/<node>/hook.sock: the planner listens there, 0600, for root only.
std::string hook_socket_path(std::string_view state_dir, std::string_view node);

}  // namespace vgpu::contract
