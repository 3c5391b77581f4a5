// vgpu-job-env: prints the environment the gres/vgpu plugin would give a step of job JOB on this
// node, one NAME=VALUE a line, from the same bridge call slurmstepd makes (vgpu_gres_job_env over
// the node's job record, gres_plugin/bridge). For tools/h200-run/real-gpu-run.sh, which runs the
// hooks without Slurm: the job's programs then get exactly what a Slurm step would.
//   vgpu-job-env JOB      (VGPU_STATE_DIR and SLURMD_NODENAME or VGPU_NODENAME as for slurmd)
// Exit status: 0 set from the record; 1 the plugin hid every GPU (the reason on stderr); 2 usage.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bridge/vgpu_gres_bridge.h"

namespace {

void print_var(void* /*ctx*/, const char* name, const char* value) { std::printf("%s=%s\n", name, value); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::strtoul(argv[1], nullptr, 10) == 0) {
    std::fprintf(stderr, "usage: vgpu-job-env JOB\n");
    return 2;
  }
  // slurmstepd's title for the batch step of the job: the plugin takes the job from it.
  const std::string title = std::string("slurmstepd: [") + argv[1] + ".batch]";
  char message[512] = "";
  const int rc = vgpu_gres_job_env(title.c_str(), argv[1], print_var, nullptr, message, sizeof message);
  if (rc != 1) {
    std::fprintf(stderr, "vgpu-job-env: job %s: GPUs hidden: %s\n", argv[1], message);
    return 1;
  }
  return 0;
}
