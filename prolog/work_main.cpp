// vgpu-prolog-work: the work of slurmd's Prolog (with PrologFlags=Alloc), run by the vgpu-prolog
// front end (front_main.cpp, nodeagent/hook_socket/front_end.h) under the same argv[0] when the planner does not serve the job.
// Creates the job's MIG instances.
// Always exits 0: a failing Prolog drains the node, so problems cancel the job with a reason
// instead (see run_prolog) and are logged.
//
// A prolog that dies by a signal would drain the node just the same, or (behind a wrapper that
// exits 0) let the job start without its instances. So the work runs in a child process and this
// one supervises it: a child killed by a signal is run once more (the prolog is idempotent: it
// keeps its claims and adopts an instance created but not recorded); if that one dies too, what
// the job holds on this node is released exactly as the epilog would, and the job is cancelled
// with a reason. A SIGKILL of this supervisor itself cannot be handled here: slurmd then drains
// the node, and the epilog and the planner's reconcile clean up (docs/reliability.md).
//
// When the node's planner listens on its hook socket, it does the work instead (nodeagent/
// hook_socket/hook_socket.h): no NVML, policy or fork in this process. A planner that dies while serving is
// seen as the end of the socket, and the work then runs here under the supervisor above.
#include <fmt/format.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "adapters.h"
#include "hook_process.h"
#include "hook_work.h"
#include "node_runtime.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/prolog.h"

namespace {

int prolog(const vgpu::PrologRequest& req, std::chrono::steady_clock::time_point started) {
  const vgpu::JobId job = req.job;
  try {
    auto rt = vgpu::agent::NodeRuntime::from_environment("vgpu-prolog");
    if (!rt) {
      std::string why = fmt::format("vgpu: prolog: job {}: node not ready: {}", job, rt.error().message);
      std::fprintf(stderr, "%s\n", why.c_str());
      if (auto slurm = vgpu::agent::make_command_slurm_client()) (void)slurm->reject_job(job, why);
      if (auto bare = vgpu::agent::NodeRuntime::bare_context()) {
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        (void)vgpu::tally_hook_run(*bare, {"prolog", took.count(), "node", false});
      }
      return 0;
    }
    vgpu::agent::prolog_with(**rt, req, started);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: prolog: job %u: unexpected: %s\n", job, e.what());
    return 0;
  }
}

}  // namespace

constexpr std::string_view kHelp =
    R"(vgpu-prolog - slurmd's Prolog for slurm-vgpu (slurm.conf: Prolog=, PrologFlags=Alloc)

Creates the MIG instances Slurm allocated to the job on this node, at the placements the node's
planner advertised, and writes the job record the gres/vgpu plugin turns into CUDA_VISIBLE_DEVICES.
A job it cannot serve is cancelled with a reason in its Comment; it always exits 0, so the node
never drains. Run by slurmd with no arguments; it reads its environment:
  SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_PARTITION, SLURMD_NODENAME   from slurmd
  VGPU_ALLOC        what the job holds here, set by gres/vgpu ("1g.10gb:2,3g.40gb:1")
  VGPU_STATE_DIR    node state (default /var/lib/slurm-vgpu)
  VGPU_POLICY       policy file (default /etc/slurm-vgpu/policy.json)
  VGPU_NVML_LIBRARY libnvidia-ml.so.1 to load (default: the system's)
  VGPU_CONFINE_DEVICES capability-files (default: the job's instances' /dev/nvidia-caps files
                    belong to the job's user while it runs) or off
Logs to <state dir>/<node>/vgpu.log. See docs/admin.md.
)";

int main(int argc, char** argv) {
  // The cleanup process a crashed prolog's release handed its instances to (VGPU_SCRUB_AFTER_EPILOG).
  if (auto rc = vgpu::agent::finish_released_if_asked(argc, argv)) return *rc;
  if (vgpu::agent::answer_help(argc, argv, "vgpu-prolog", kHelp)) return 0;
  const auto started = std::chrono::steady_clock::now();
  const char* alloc_env = std::getenv("VGPU_ALLOC");
  const char* partition_env = std::getenv("SLURM_JOB_PARTITION");
  // Most jobs without VGPU_ALLOC hold no vgpu and return here at once; only a job of a partition
  // the policy serves is checked with Slurm (vgpu_alloc_for_prolog says why).
  if ((!alloc_env || !*alloc_env) && !vgpu::agent::policy_serves_partition(partition_env ? partition_env : ""))
    return 0;
  if (!vgpu::agent::job_id_from_env("prolog")) return 0;
  auto request = vgpu::contract::hook_request_from_env(
      vgpu::contract::HookKind::prolog, [](const char* name) { return std::getenv(name); },
      vgpu::agent::monotonic_ns(started));
  if (!request) return 0;
  const vgpu::JobId job = request->job;
  const char* node_env = std::getenv("SLURMD_NODENAME");
  const std::string node = node_env ? node_env : "";
  if (request->alloc.empty()) {
    request->alloc = vgpu::agent::alloc_from_slurm(job, request->partition);
    if (request->alloc.empty()) return 0;  // no vgpu on this node for this job
  }
  // The node's planner does the work when it listens: it holds NVML and the policy already.
  if (vgpu::agent::handed_to_planner(*request)) return 0;
  const vgpu::PrologRequest req = vgpu::agent::prolog_request_of(*request);
  int first = vgpu::agent::run_in_child([&] { return prolog(req, started); });
  if (first >= 0) return 0;
  std::fprintf(stderr, "vgpu: prolog: job %u: node %s: the prolog died by signal %d (%s); running it again\n", job,
               node.c_str(), -first, strsignal(-first));
  int second = vgpu::agent::run_in_child([&] { return prolog(req, started); });
  if (second >= 0) return 0;
  std::string why = fmt::format(
      "vgpu: prolog: job {}: node {}: the prolog died twice (signal {}, then {}); "
      "instances released, job cancelled",
      job, node, -first, -second);
  std::fprintf(stderr, "%s\n", why.c_str());
  int released = vgpu::agent::run_in_child(
      [&] { return vgpu::agent::release_job("prolog", job, "prolog crashed", started, "node"); });
  if (released < 0)
    std::fprintf(stderr, "vgpu: prolog: job %u: release died by signal %d; the epilog and the planner finish it\n", job,
                 -released);
  try {
    if (auto slurm = vgpu::agent::make_command_slurm_client()) (void)slurm->reject_job(job, why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: prolog: job %u: cancel: unexpected: %s\n", job, e.what());
  }
  return 0;
}
