// The hooks' work with a node runtime that is up (hook_work.h).
#include "hook_work.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <string>

#include "adapters.h"
#include "node_runtime.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/prolog.h"

namespace vgpu::agent {

PrologRequest prolog_request_of(const contract::HookRequest& request) {
  return {request.job, request.user, request.partition, request.alloc, request.uid};
}

void tally_run(NodeRuntime& rt, std::string_view hook, std::chrono::steady_clock::time_point started,
               std::string_view cancel_class, bool requeued) {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  auto& ctx = rt.context();
  if (auto ok = tally_hook_run(ctx, {hook, took.count(), cancel_class, requeued}); !ok)
    rt.log(fmt::format("vgpu: {}: node {}: metrics tally: {}", hook, ctx.node, ok.error().message));
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
  if (a.ec != std::errc{} || a.ptr != text.data() + colon || b.ec != std::errc{} ||
      b.ptr != text.data() + text.size() || gpu < 0 || gi < 0)
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
        log_to_node_file(
            fmt::format("vgpu: cleanup: argument '{}': expected GPU:GPU-instance-id; nothing done (the "
                        "planner's rounds finish released instances)",
                        contract::printable(argv[i])));
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
    if (!result) (*rt)->log(fmt::format("vgpu: cleanup: {}", result.error().message));
    else
      (*rt)->log(
          fmt::format("vgpu: cleanup: {} instance(s) handed over by an epilog: {} kept idle, {} destroyed, {} "
                      "quarantined{}",
                      held.size(), result->kept, result->destroyed, result->quarantined,
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
