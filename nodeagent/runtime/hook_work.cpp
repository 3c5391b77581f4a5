#include "hook_support.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "adapters.h"
#include "hook_front.h"
#include "hook_service.h"
#include "node_runtime.h"
#include "vgpu/base/text_split.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/prolog.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/ledger/ledger_store.h"

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
      std::fprintf(stderr, "vgpu: prolog: job %u: no VGPU_ALLOC from slurmctld (gres/vgpu not loaded there yet?); "
                           "the job holds %s here by squeue\n", job, alloc->c_str());
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

void tally_run(NodeRuntime& rt, std::string_view hook, std::chrono::steady_clock::time_point started,
               std::string_view cancel_class, bool requeued) {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  auto& ctx = rt.context();
  if (auto ok = tally_hook_run(ctx, {hook, took.count(), cancel_class, requeued}); !ok)
    rt.log(fmt::format("vgpu: {}: node {}: metrics tally: {}", hook, ctx.node, ok.error().message));
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

std::int64_t monotonic_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::steady_clock::time_point from_monotonic_ns(std::int64_t ns) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(ns)));
}

void prolog_with(NodeRuntime& rt, const PrologRequest& req, std::chrono::steady_clock::time_point started) {
  // Every prolog ends with a verdict: served, requeued or cancelled with a reason. An exception
  // (a defect) is an error like any other, never an exit 0 that leaves the job started bare.
  Result<PrologResult> result = fail(ErrorCode::internal, "");
  try {
    result = run_prolog(rt.context(), req);
  } catch (const std::exception& e) {
    result = fail(ErrorCode::internal, fmt::format("prolog: job {}: unexpected: {}", req.job, e.what()));
  }
  if (!result) {
    rt.log(result.error().message);
    (void)rt.context().slurm->reject_job(req.job, "vgpu: " + result.error().message);
  }
  tally_run(rt, "prolog", started, result ? result->cancel_class : "node", result && result->requeued);
}

void release_job_with(NodeRuntime& rt, std::string_view program, JobId job, std::string_view reason,
                      std::optional<std::chrono::steady_clock::time_point> started, std::string_view cancel_class) {
  auto result = run_epilog(rt.context(), job, std::string(reason));
  if (!result) rt.log(result.error().message);
  rt.poke_planner();
  if (started) tally_run(rt, program, *started, cancel_class);
}

namespace {

// "GPU:GI" as the hand-off writes it; nullopt for anything else.
std::optional<std::pair<int, int>> parse_instance_key(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  int gpu = -1, gi = -1;
  const auto a = std::from_chars(text.data(), text.data() + colon, gpu);
  const auto b = std::from_chars(text.data() + colon + 1, text.data() + text.size(), gi);
  if (a.ec != std::errc{} || a.ptr != text.data() + colon || b.ec != std::errc{} || b.ptr != text.data() + text.size() ||
      gpu < 0 || gi < 0)
    return std::nullopt;
  return std::pair{gpu, gi};
}

// Before the runtime is up (or when it cannot come up) the node's log is the only place a
// detached process can say anything: its stderr is /dev/null.
void log_to_node_file(const std::string& line) {
  if (auto bare = NodeRuntime::bare_context()) NodeRuntime::append_to_node_log(*bare, kCleanupProcessName, line);
}

}  // namespace

std::optional<int> finish_released_if_asked(int argc, char** argv) noexcept {
  if (argc < 2 || std::string_view(argv[1]) != kFinishReleasedFlag) return std::nullopt;
  try {
    std::vector<HeldCleanup> held;
    for (int i = 2; i < argc; ++i) {
      auto key = parse_instance_key(argv[i]);
      if (!key) {
        log_to_node_file(fmt::format("vgpu: cleanup: argument '{}': expected GPU:GPU-instance-id; nothing done (the "
                                     "planner's rounds finish released instances)", contract::printable(argv[i])));
        return 2;
      }
      held.push_back({key->first, key->second, 3 + (i - 2)});
    }
    auto rt = NodeRuntime::from_environment(kCleanupProcessName);
    if (!rt) {
      log_to_node_file(fmt::format("vgpu: cleanup: node not ready: {}; the planner's rounds finish released instances",
                                   rt.error().message));
      return 0;
    }
    auto& ctx = (*rt)->context();
    auto result = finish_handed_off_instances(ctx, held);
    if (!result)
      (*rt)->log(fmt::format("vgpu: cleanup: {}", result.error().message));
    else
      (*rt)->log(fmt::format("vgpu: cleanup: {} instance(s) handed over by an epilog: {} kept idle, {} destroyed, {} "
                             "quarantined{}", held.size(), result->kept, result->destroyed, result->quarantined,
                             result->problems.empty() ? "" : "; problems: " + result->problems.front()));
    // Destroyed instances free space for the plan, as after an epilog that cleaned up itself.
    (*rt)->poke_planner();
  } catch (const std::exception& e) {
    log_to_node_file(std::string("vgpu: cleanup: unexpected: ") + e.what());
  }
  return 0;
}

int release_job(std::string_view program, JobId job, std::string_view reason,
                std::optional<std::chrono::steady_clock::time_point> started, std::string_view cancel_class) {
  const std::string who = "vgpu-" + std::string(program);
  try {
    auto rt = NodeRuntime::from_environment(who);
    if (!rt) {
      std::fprintf(stderr, "vgpu: %s: job %u: node not ready: %s\n", std::string(program).c_str(), job,
                   rt.error().message.c_str());
      return 0;
    }
    release_job_with(**rt, program, job, reason, started, cancel_class);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: %s: job %u: unexpected: %s\n", std::string(program).c_str(), job, e.what());
  }
  return 0;
}

}  // namespace vgpu::agent
