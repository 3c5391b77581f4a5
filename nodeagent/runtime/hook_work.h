// The hooks' work with a node runtime that is up: the prolog's and the epilog's flows, the job
// cancelled with a reason when they fail, each run tallied for the metrics. The work programs
// (prolog/, epilog/) and the planner serving a hook (hook_socket.h) run exactly this.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/contract/hook_request.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/prolog.h"

namespace vgpu::agent {

class NodeRuntime;

// The prolog's request as the hook handed it over (hook_request.h builds it from slurmd's
// environment).
PrologRequest prolog_request_of(const contract::HookRequest& request);

// The epilog's flow for `job` (release, scrub, destroy, stop its VM), then pokes the planner.
// Always 0: problems are logged, the planner's rounds finish what is left.
// With `started` (when the hook began), the run is added to the node's hook tally for the metrics,
// with `cancel_class` when the job was cancelled (a prolog that crashed twice: "node").
int release_job(std::string_view program, JobId job, std::string_view reason,
                std::optional<std::chrono::steady_clock::time_point> started = std::nullopt,
                std::string_view cancel_class = {});
// The same flow with a runtime that is already up: the hook's own, or the planner's when it serves
// the hook (hook_socket.h).
void release_job_with(NodeRuntime& rt, std::string_view program, JobId job, std::string_view reason,
                      std::optional<std::chrono::steady_clock::time_point> started = std::nullopt,
                      std::string_view cancel_class = {});
// The prolog's work with a runtime that is up: run_prolog, the job cancelled with a reason when it
// fails, the run tallied.
void prolog_with(NodeRuntime& rt, const PrologRequest& request, std::chrono::steady_clock::time_point started);

// The cleanup process an epilog hands its released instances to (VGPU_SCRUB_AFTER_EPILOG=on;
// adapters.h, make_cleanup_process_handoff): when argv is `<program> --finish-released GPU:GI...`,
// finishes those instances with the locks inherited on descriptors 3, 4, ... and returns the exit
// status (0: problems are logged to the node's vgpu.log). nullopt for any other argv.
std::optional<int> finish_released_if_asked(int argc, char** argv) noexcept;

// CLOCK_MONOTONIC nanoseconds for a hook request's `since`, and back.
std::int64_t monotonic_ns(std::chrono::steady_clock::time_point t);
std::chrono::steady_clock::time_point from_monotonic_ns(std::int64_t ns);

// Adds a hook run to the node's tally (vgpu/node/hook_tally_store.h); a failure is logged only.
void tally_run(NodeRuntime& rt, std::string_view hook, std::chrono::steady_clock::time_point started,
               std::string_view cancel_class = {}, bool requeued = false);

}  // namespace vgpu::agent
