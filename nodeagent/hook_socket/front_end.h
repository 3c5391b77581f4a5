// What slurmd runs as Prolog and Epilog (prolog/front_main.cpp, epilog/front_main.cpp): a small
// front end that hands the job to the node's planner over its hook socket (hook_socket.h) and
// exits, and otherwise executes the program that does the work here (vgpu-prolog-work,
// vgpu-epilog-work, next to it). slurmd starts it for every job, so it links nothing but the
// contract and this, and carries its own C++ runtime: no policy, NVML, fmt or shared libstdc++ to
// load when the planner serves (docs/benchmarks.md, "A hook front end").
//
// It hands over only what the hook itself would hand over unasked; everything else (arguments,
// a prolog without VGPU_ALLOC, an epilog of a job without a job record here, VGPU_HOOK_SERVICE=off,
// a node name or job id the work program must report) goes to the work program unchanged, which
// decides as it does without a planner. A planner that declines, or does not listen, is not asked twice: the
// work program runs with VGPU_HOOK_SERVICE=off.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/job_id.h"
#include "vgpu/contract/hook_request.h"
#include "vgpu/contract/node_files.h"

namespace vgpu::agent {

// Job ids and uids are read by the contract's one parser of each (node_files.h, hook_request.h).
using contract::parse_job_id;
using contract::parse_job_uid;

struct FrontHandover {
  contract::HookRequest request;
  std::string socket_path;
};
using contract::EnvLookup;
using FileExists = std::function<bool(const std::string&)>;
// The request to hand the planner for this hook run, or none when the work program decides.
// `hostname` is this host's name (the last source of the node's name, as for the work program).
std::optional<FrontHandover> front_handover(contract::HookKind kind, int argc, const EnvLookup& env,
                                            std::string_view hostname, const FileExists& exists,
                                            std::int64_t started_ns);

// Hands `request` to the planner listening at `socket_path`: true when the planner did the work
// (what the work printed is copied to stderr, for slurmd's log); otherwise false, with a line on
// stderr saying why when there is a reason, and the caller does the work.
bool served_by_planner(const std::string& socket_path, const contract::HookRequest& request);

// The work program of `kind` next to the front end at `self` (its resolved path).
std::string work_program_path(std::string_view self, contract::HookKind kind);

// The front end's whole run as slurmd starts it: hands the hook over, or executes the work program
// with the same argv. Returns only when that program cannot be started (a broken installation,
// said so): 1 for a prolog, so the job does not start as if it had its instances; 0 for an epilog.
int run_front_end(contract::HookKind kind, int argc, char** argv);

}  // namespace vgpu::agent
