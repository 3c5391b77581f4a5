// What a hook's work program does as a process slurmd started (hook_process.h).
#include "hook_process.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "adapters.h"
#include "front_end.h"
#include "hook_socket.h"
#include "node_runtime.h"
#include "vgpu/base/text_split.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/ledger/ledger_store.h"
#include "vgpu/node/prolog.h"

namespace vgpu::agent {

bool answer_help(int argc, char** argv, std::string_view program, std::string_view help) {
  if (argc < 2) return false;
  std::string_view arg = argv[1];
  if (arg == "--version") {
    std::printf("%.*s (slurm-vgpu) %s\n", static_cast<int>(program.size()), program.data(), VGPU_VERSION);
    return true;
  }
  if (arg == "--help" || arg == "-h") {
    std::printf("%.*s", static_cast<int>(help.size()), help.data());
    return true;
  }
  std::fprintf(stderr, "%.*s: takes no arguments (it is run by slurmd); see --help\n", static_cast<int>(program.size()),
               program.data());
  return true;
}

namespace {

std::string policy_path() {
  const char* path = std::getenv("VGPU_POLICY");
  return contract::resolve_policy_path(path);
}

}  // namespace

bool policy_serves_partition(const std::string& partition) {
  if (partition.empty()) return false;
  auto policy = load_policy_file(policy_path());
  if (!policy) return false;
  for (auto name : split_view(partition, ','))
    if (policy->partition(name)) return true;
  return false;
}

std::string alloc_from_slurm(JobId job, const std::string& partition) {
  try {
    auto policy = load_policy_file(policy_path());
    if (!policy) return {};
    auto slurm = make_command_slurm_client();
    auto alloc = vgpu_alloc_for_prolog(*policy, *slurm, job, partition, "");
    if (!alloc) {
      std::fprintf(stderr, "vgpu: prolog: job %u: no VGPU_ALLOC and %s\n", job, alloc.error().message.c_str());
      return {};
    }
    if (!alloc->empty())
      std::fprintf(stderr,
                   "vgpu: prolog: job %u: no VGPU_ALLOC from slurmctld (gres/vgpu not loaded there yet?); "
                   "the job holds %s here by squeue\n",
                   job, alloc->c_str());
    return *alloc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: prolog: job %u: unexpected: %s\n", job, e.what());
    return {};
  }
}

std::optional<JobId> job_id_from_env(std::string_view program) {
  const char* id = std::getenv("SLURM_JOB_ID");
  const std::string text = id ? id : "";
  auto job = parse_job_id(text);
  if (!job)
    std::fprintf(stderr, "vgpu: %.*s: SLURM_JOB_ID '%s' is not a job id\n", static_cast<int>(program.size()),
                 program.data(), text.c_str());
  return job;
}

int run_in_child(const std::function<int()>& work) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return work();
  if (pid == 0) std::exit(work());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

// slurmd runs the epilog for every job, also those that hold no vgpu here (CPU work on a GPU
// node). Such an epilog ends before the node's runtime starts: no NVML (about 23 ms, 18 of them
// CPU, per process on a real H100: docs/benchmarks.md), no policy, no ledger write. Anything
// unsure takes the full path: no ledger yet, one that does not load, a job record still there.
// Work left by a crashed epilog of another job is not lost: the planner's rounds finish it.
// It runs in the epilog's supervising process, which must not die: nothing leaves it.
bool holds_nothing_here(JobId job) noexcept {
  try {
    auto bare = NodeRuntime::bare_context();
    if (!bare) return false;
    auto ledger = LedgerStore(bare->node_dir()).load();
    if (!ledger || names_job(*ledger, job)) return false;
    struct stat st {};
    return ::stat(contract::job_record_path(bare->state_dir, bare->node, job).c_str(), &st) != 0 && errno == ENOENT;
  } catch (...) {
    return false;
  }
}

bool handed_to_planner(const contract::HookRequest& request) noexcept {
  try {
    if (!hook_service_enabled()) return false;
    auto bare = NodeRuntime::bare_context();
    if (!bare) return false;
    return served_by_planner(contract::hook_socket_path(bare->state_dir, bare->node), request);
  } catch (...) {
    return false;  // runs in the hook's supervising process, which must not die: do the work here
  }
}

}  // namespace vgpu::agent
