// vgpu-epilog-work: the work of slurmd's Epilog, run by the vgpu-epilog front end
// (front_main.cpp, nodeagent/hook_socket/front_end.h) under the same argv[0] when the planner does not serve the job. Releases,
// scrubs and destroys the job's instances, then pokes the planner. Always exits 0 (a failing Epilog
// drains the node); unfinished work stays in the ledger and the planner's next round completes it.
//
// The work runs in a child process: when a signal kills it (before or after the job's instances
// were released), this supervisor runs it again, up to three times; the epilog is idempotent. A
// SIGKILL of the supervisor itself drains the node (docs/reliability.md).
// When the node's planner listens on its hook socket, it does the work instead, as for the prolog.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hook_process.h"
#include "hook_work.h"
#include "vgpu/contract/node_files.h"

constexpr std::string_view kHelp = R"(vgpu-epilog - slurmd's Epilog for slurm-vgpu (slurm.conf: Epilog=)

Ends the job's tenancy on this node: records it in the node's history, scrubs and destroys the
job's MIG instances, stops its viz VM, and lets the planner re-plan the freed space. Safe to run
any number of times; always exits 0, so the node never drains. Run by slurmd with no arguments:
  SLURM_JOB_ID, SLURMD_NODENAME   from slurmd
  VGPU_STATE_DIR    node state (default /var/lib/slurm-vgpu)
  VGPU_POLICY       policy file (default /etc/slurm-vgpu/policy.json)
  VGPU_SCRUB        vgpu-scrub to run (default: the installed one)
Logs to <state dir>/<node>/vgpu.log. See docs/admin.md.
)";

int main(int argc, char** argv) {
  // The cleanup process an epilog of this program handed its instances to (VGPU_SCRUB_AFTER_EPILOG).
  if (auto rc = vgpu::agent::finish_released_if_asked(argc, argv)) return *rc;
  if (vgpu::agent::answer_help(argc, argv, "vgpu-epilog", kHelp)) return 0;
  const auto started = std::chrono::steady_clock::now();
  if (!vgpu::agent::job_id_from_env("epilog")) return 0;
  const auto request = vgpu::contract::hook_request_from_env(
      vgpu::contract::HookKind::epilog, [](const char* name) { return std::getenv(name); },
      vgpu::agent::monotonic_ns(started));
  if (!request) return 0;
  const vgpu::JobId job = request->job;
  if (vgpu::agent::holds_nothing_here(job)) return 0;
  // The node's planner does the work when it listens: it holds NVML and the policy already.
  if (vgpu::agent::handed_to_planner(*request)) return 0;
  constexpr int kAttempts = 3;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    int rc = vgpu::agent::run_in_child([&] { return vgpu::agent::release_job("epilog", job, "ended", started); });
    if (rc >= 0) return 0;
    std::fprintf(stderr, "vgpu: epilog: job %u: attempt %d of %d died by signal %d (%s)%s\n", job, attempt, kAttempts,
                 -rc, strsignal(-rc),
                 attempt < kAttempts ? "; running it again" : "; the planner's rounds finish what was released");
  }
  return 0;
}
