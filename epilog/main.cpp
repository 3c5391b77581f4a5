// vgpu-epilog: slurmd's Epilog. Releases, scrubs and destroys the job's instances, then pokes the
// planner. Always exits 0 (a failing Epilog drains the node); unfinished work stays in the ledger
// and the planner's next round completes it.
//
// The work runs in a child process: when a signal kills it (before or after the job's instances
// were released), this supervisor runs it again, up to three times; the epilog is idempotent. A
// SIGKILL of the supervisor itself drains the node (docs/reliability.md).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "node_runtime.h"

namespace {

int epilog(vgpu::JobId job) {
  try {
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
    std::fprintf(stderr, "vgpu: epilog: job %u: unexpected: %s\n", job, e.what());
    return 0;
  }
}

// The epilog's exit status, or -signal when a signal killed it.
int epilog_in_child(vgpu::JobId job) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return epilog(job);
  if (pid == 0) std::exit(epilog(job));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

}  // namespace

int main() {
  const char* id = std::getenv("SLURM_JOB_ID");
  std::string id_text = id ? id : "";
  vgpu::JobId job = 0;
  auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), job);
  if (ec != std::errc() || p != id_text.data() + id_text.size() || job == 0) {
    std::fprintf(stderr, "vgpu: epilog: SLURM_JOB_ID '%s' is not a job id\n", id_text.c_str());
    return 0;
  }
  constexpr int kAttempts = 3;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    int rc = epilog_in_child(job);
    if (rc >= 0) return 0;
    std::fprintf(stderr, "vgpu: epilog: job %u: attempt %d of %d died by signal %d (%s)%s\n", job, attempt, kAttempts,
                 -rc, strsignal(-rc), attempt < kAttempts ? "; running it again" : "; the planner's rounds finish what was released");
  }
  return 0;
}
