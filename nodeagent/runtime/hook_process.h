// What a hook's work program (vgpu-prolog-work, vgpu-epilog-work) does as a process slurmd
// started: its --help, the job id from the environment, whether the job concerns slurm-vgpu at all
// before anything is loaded, the hand-over to the planner, and the supervisor that runs the work
// in a child so that a killed worker never drains the node.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/job_id.h"
#include "vgpu/contract/hook_request.h"

namespace vgpu::agent {

// `--help` / `--version` for a program slurmd runs without arguments: prints and returns true when
// one was asked for (the caller exits 0), false when the program should run as a hook.
bool answer_help(int argc, char** argv, std::string_view program, std::string_view help);

// Whether the node's policy ($VGPU_POLICY) has partition `partition` (a comma list); false when the
// policy cannot be read (the prolog then treats the job as holding no vgpu).
bool policy_serves_partition(const std::string& partition);
// What a job without VGPU_ALLOC holds here, asked from Slurm (vgpu_alloc_for_prolog); "" when
// nothing, or on an error (logged).
std::string alloc_from_slurm(JobId job, const std::string& partition);

// SLURM_JOB_ID as a job id; nullopt (and a line on stderr naming `program`) when it is not one.
std::optional<JobId> job_id_from_env(std::string_view program);

// Runs `work` in a child process: its exit status, or -signal when a signal killed it. When no
// child can be made, the work runs here rather than not at all.
int run_in_child(const std::function<int()>& work);

// Whether the ledger names `job` nowhere and no job record of it is left: its epilog has nothing to
// do (false when unsure: no ledger, one that does not load).
bool holds_nothing_here(JobId job) noexcept;

// Hands the hook to the node's planner (hook_socket.h); true when the planner did the work (its
// output is copied to stderr). False: the caller does the work itself, as without a planner.
bool handed_to_planner(const contract::HookRequest& request) noexcept;

}  // namespace vgpu::agent
