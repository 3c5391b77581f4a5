// vgpu-epilog: slurmd's Epilog. Releases, scrubs and destroys the job's instances, then pokes the
// planner. Always exits 0 (a failing Epilog drains the node); unfinished work stays in the ledger
// and the planner's next round completes it.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "node_runtime.h"

int main() {
  try {
    const char* id = std::getenv("SLURM_JOB_ID");
    std::string id_text = id ? id : "";
    vgpu::JobId job = 0;
    auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), job);
    if (ec != std::errc() || p != id_text.data() + id_text.size() || job == 0) {
      std::fprintf(stderr, "vgpu: epilog: SLURM_JOB_ID '%s' is not a job id\n", id_text.c_str());
      return 0;
    }
    auto rt = vgpu::agent::NodeRuntime::from_environment("vgpu-epilog");
    if (!rt) {
      std::fprintf(stderr, "vgpu: epilog: job %u: node not ready: %s\n", job, rt.error().message.c_str());
      return 0;
    }
    auto result = vgpu::run_epilog((*rt)->context(), job, "ended");
    if (!result) (*rt)->log(result.error().message);
    (*rt)->poke_planner();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu: epilog: unexpected: %s\n", e.what());
    return 0;
  }
}
