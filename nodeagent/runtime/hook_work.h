// What vgpu-prolog and vgpu-epilog share as slurmd hooks: the job id from the environment, the
// supervisor that runs their work in a child (so a killed worker never drains the node), and
// releasing what a job holds on the node the way the epilog does.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/contract/hook_request.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/prolog.h"

namespace vgpu::agent {

class NodeRuntime;

// `--help` / `--version` for a program slurmd runs without arguments: prints and returns true when
// one was asked for (the caller exits 0), false when the program should run as a hook.
bool answer_help(int argc, char** argv, std::string_view program, std::string_view help);

// Whether the node's policy ($VGPU_POLICY) has partition `partition` (a comma list); false when the
// policy cannot be read (the prolog then treats the job as holding no vgpu, as before).
bool policy_serves_partition(const std::string& partition);
// What a job without VGPU_ALLOC holds here, asked from Slurm (vgpu_alloc_for_prolog); "" when
// nothing, or on an error (logged).
std::string alloc_from_slurm(JobId job, const std::string& partition);

// SLURM_JOB_ID as a job id; nullopt (and a line on stderr naming `program`) when it is not one.
std::optional<JobId> job_id_from_env(std::string_view program);

// Runs `work` in a child process: its exit status, or -signal when a signal killed it. When no
// child can be made, the work runs here rather than not at all.
int run_in_child(const std::function<int()>& work);

// The epilog's flow for `job` (release, scrub, destroy, stop its VM), then pokes the planner.
// Always 0: problems are logged, the planner's rounds finish what is left.
// With `started` (when the hook began), the run is added to the node's hook tally for the metrics,
// with `cancel_class` when the job was cancelled (a prolog that crashed twice: "node").
int release_job(std::string_view program, JobId job, std::string_view reason,
                std::optional<std::chrono::steady_clock::time_point> started = std::nullopt,
                std::string_view cancel_class = {});
// The same flow with a runtime that is already up: the hook's own, or the planner's when it serves
// the hook (hook_service.h).
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

// Whether the ledger names `job` nowhere and no job record of it is left: its epilog has nothing to
// do (false when unsure: no ledger, one that does not load).
bool holds_nothing_here(JobId job) noexcept;

// Hands the hook to the node's planner (hook_service.h); true when the planner did the work (its
// output is copied to stderr). False: the caller does the work itself, as without a planner.
bool handed_to_planner(const contract::HookRequest& request) noexcept;
// CLOCK_MONOTONIC nanoseconds for a hook request's `since`, and back.
std::int64_t monotonic_ns(std::chrono::steady_clock::time_point t);
std::chrono::steady_clock::time_point from_monotonic_ns(std::int64_t ns);

// Adds a hook run to the node's tally (vgpu/node/hook_tally_store.h); a failure is logged only.
void tally_run(NodeRuntime& rt, std::string_view hook, std::chrono::steady_clock::time_point started,
               std::string_view cancel_class = {}, bool requeued = false);

}  // namespace vgpu::agent
