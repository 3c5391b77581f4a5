// vgpu-prolog and vgpu-epilog as slurmd runs them: the front end of hook_front.h, built once per
// hook (VGPU_HOOK_KIND). Always exits as the work program would: 0, unless the work program itself
// cannot be started, which is a broken installation and said so.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hook_front.h"

namespace {

constexpr auto kKind = vgpu::contract::HookKind::VGPU_HOOK_KIND;

std::string self_path(const char* argv0) {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string(argv0 ? argv0 : "");
}

}  // namespace

int main(int argc, char** argv) {
  const auto started = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch()).count();
  const std::string hook(vgpu::contract::hook_kind_name(kKind));
  try {
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    auto handover = vgpu::agent::front_handover(
        kKind, argc, [](const char* name) { return std::getenv(name); }, host,
        [](const std::string& path) {
          struct stat st {};
          return ::stat(path.c_str(), &st) == 0;
        },
        started);
    if (handover) {
      if (vgpu::agent::served_by_planner(handover->socket_path, handover->request)) return 0;
      ::setenv("VGPU_HOOK_SERVICE", "off", 1);  // asked once: the work program does not ask again
    }
  } catch (...) {
    // Anything unexpected here leaves the job to the work program, which does what the hook always did.
  }
  // argv[0] unchanged: the work program's logs, crash points and ps name stay the hook's.
  const std::string work = vgpu::agent::work_program_path(self_path(argv[0]), kKind);
  ::execv(work.c_str(), argv);
  std::fprintf(stderr, "vgpu: %s: cannot run %s: %s; the slurm-vgpu installation is incomplete\n", hook.c_str(),
               work.c_str(), std::strerror(errno));
  // A prolog that did nothing must not let the job start as if it had its instances; an epilog that
  // did nothing leaves the release to the planner's reconcile.
  return kKind == vgpu::contract::HookKind::prolog ? 1 : 0;
}
