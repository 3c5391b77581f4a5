#include "front_end.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hook_socket.h"
#include "vgpu/contract/node_files.h"

namespace vgpu::agent {

std::optional<FrontHandover> front_handover(contract::HookKind kind, int argc, const EnvLookup& env,
                                            std::string_view hostname, const FileExists& exists,
                                            std::int64_t started_ns) {
  if (argc != 1) return std::nullopt;  // --help, --version, --finish-released: the work program's
  if (const char* service = env("VGPU_HOOK_SERVICE"); service && std::string_view(service) == "off")
    return std::nullopt;
  auto request = contract::hook_request_from_env(kind, env, started_ns);
  if (!request) return std::nullopt;
  auto node = contract::resolve_node_name({env("VGPU_NODENAME"), env("SLURMD_NODENAME"), {}, hostname});
  if (!node) return std::nullopt;
  const std::string state_dir = contract::resolve_state_dir(env("VGPU_STATE_DIR"));
  // Without VGPU_ALLOC the work program asks the policy and Slurm whether the job holds anything.
  if (kind == contract::HookKind::prolog && request->alloc.empty()) return std::nullopt;
  // The work program reads the ledger to tell a job that holds nothing here (most jobs on a node
  // that also runs other work) from one whose prolog failed before writing its record.
  if (kind == contract::HookKind::epilog && !exists(contract::job_record_path(state_dir, *node, request->job)))
    return std::nullopt;
  FrontHandover h;
  h.socket_path = contract::hook_socket_path(state_dir, *node);
  h.request = std::move(*request);
  return h;
}

bool served_by_planner(const std::string& socket_path, const contract::HookRequest& request) {
  auto d = delegate_to_planner(socket_path, request);
  if (d.served) {
    std::fwrite(d.output.data(), 1, d.output.size(), stderr);
    return true;
  }
  if (!d.why_not.empty())
    std::fprintf(stderr, "vgpu: %s: job %u: %s; doing the work here\n",
                 std::string(contract::hook_kind_name(request.kind)).c_str(), request.job, d.why_not.c_str());
  return false;
}

std::string work_program_path(std::string_view self, contract::HookKind kind) {
  const auto slash = self.rfind('/');
  const std::string dir = slash == std::string_view::npos ? "." : std::string(self.substr(0, slash));
  return dir + "/vgpu-" + std::string(contract::hook_kind_name(kind)) + "-work";
}

namespace {

std::string self_path(const char* argv0) {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string(argv0 ? argv0 : "");
}

}  // namespace

int run_front_end(contract::HookKind kind, int argc, char** argv) {
  const auto started =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const std::string hook(contract::hook_kind_name(kind));
  try {
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    auto handover = front_handover(
        kind, argc, [](const char* name) { return std::getenv(name); }, host,
        [](const std::string& path) {
          struct stat st {};
          return ::stat(path.c_str(), &st) == 0;
        },
        started);
    if (handover) {
      if (served_by_planner(handover->socket_path, handover->request)) return 0;
      ::setenv("VGPU_HOOK_SERVICE", "off", 1);  // asked once: the work program does not ask again
    }
  } catch (...) {
    // Anything unexpected here leaves the job to the work program, which does what the hook always did.
  }
  // argv[0] unchanged: the work program's logs, crash points and ps name stay the hook's.
  const std::string work = work_program_path(self_path(argv[0]), kind);
  ::execv(work.c_str(), argv);
  std::fprintf(stderr, "vgpu: %s: cannot run %s: %s; the slurm-vgpu installation is incomplete\n", hook.c_str(),
               work.c_str(), std::strerror(errno));
  // A prolog that did nothing must not let the job start as if it had its instances; an epilog that
  // did nothing leaves the release to the planner's reconcile.
  return kind == contract::HookKind::prolog ? 1 : 0;
}

}  // namespace vgpu::agent
