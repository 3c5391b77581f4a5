#include "hook_front.h"

#include <charconv>
#include <cstdio>

#include "hook_service.h"
#include "vgpu/contract/node_files.h"

namespace vgpu::agent {

std::optional<unsigned> parse_job_uid(std::string_view text) {
  unsigned uid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return uid;
}

std::optional<FrontHandover> front_handover(contract::HookKind kind, int argc, const EnvLookup& env,
                                            std::string_view hostname, const FileExists& exists,
                                            std::int64_t started_ns) {
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";
  };
  if (argc != 1) return std::nullopt;  // --help, --version, --finish-released: the work program's
  if (get("VGPU_HOOK_SERVICE") == "off") return std::nullopt;
  const auto job = parse_job_id(get("SLURM_JOB_ID"));
  if (!job) return std::nullopt;
  auto node = contract::resolve_node_name({env("VGPU_NODENAME"), env("SLURMD_NODENAME"), {}, hostname});
  if (!node) return std::nullopt;
  const std::string state_dir = contract::resolve_state_dir(env("VGPU_STATE_DIR"));
  FrontHandover h;
  h.socket_path = contract::hook_socket_path(state_dir, *node);
  h.request.kind = kind;
  h.request.job = *job;
  h.request.policy = contract::resolve_policy_path(env("VGPU_POLICY"));
  h.request.since_ns = started_ns;
  if (kind == contract::HookKind::prolog) {
    // Without VGPU_ALLOC the work program asks the policy and Slurm whether the job holds anything.
    h.request.alloc = get("VGPU_ALLOC");
    if (h.request.alloc.empty()) return std::nullopt;
    h.request.user = get("SLURM_JOB_USER");
    h.request.uid = parse_job_uid(get("SLURM_JOB_UID"));
    h.request.partition = get("SLURM_JOB_PARTITION");
  } else if (!exists(contract::job_record_path(state_dir, *node, *job))) {
    // The work program reads the ledger to tell a job that holds nothing here (most jobs on a node
    // that also runs other work) from one whose prolog failed before writing its record.
    return std::nullopt;
  }
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

}  // namespace vgpu::agent
