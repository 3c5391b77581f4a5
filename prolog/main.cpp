// vgpu-prolog: slurmd's Prolog (with PrologFlags=Alloc). Creates the job's MIG instances.
// Always exits 0: a failing Prolog drains the node, so problems cancel the job with a reason
// instead (see run_prolog) and are logged.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "node_runtime.h"

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

int main() {
  try {
    std::string alloc = env("VGPU_ALLOC");
    if (alloc.empty()) return 0;  // no vgpu on this node for this job
    std::string id_text = env("SLURM_JOB_ID");
    vgpu::JobId job = 0;
    auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), job);
    if (ec != std::errc() || p != id_text.data() + id_text.size() || job == 0) {
      std::fprintf(stderr, "vgpu: prolog: SLURM_JOB_ID '%s' is not a job id\n", id_text.c_str());
      return 0;
    }
    auto rt = vgpu::agent::NodeRuntime::from_environment("vgpu-prolog");
    if (!rt) {
      std::string why = fmt::format("vgpu: prolog: job {}: node not ready: {}", job, rt.error().message);
      std::fprintf(stderr, "%s\n", why.c_str());
      if (auto slurm = vgpu::make_command_slurm_client()) (void)slurm->reject_job(job, why);
      return 0;
    }
    vgpu::PrologRequest req{job, env("SLURM_JOB_USER"), env("SLURM_JOB_PARTITION"), alloc};
    auto result = vgpu::run_prolog((*rt)->context(), req);
    if (!result) {
      (*rt)->log(result.error().message);
      (void)(*rt)->context().slurm->reject_job(job, "vgpu: " + result.error().message);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: prolog: unexpected: %s\n", e.what());
    return 0;
  }
}
