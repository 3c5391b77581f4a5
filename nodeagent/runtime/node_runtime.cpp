#include "node_runtime.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <algorithm>
#include <fstream>

#include "adapters.h"
#include "amdgpu_backend.h"
#include "nvml_backend.h"
#include "vgpu/backend/whole_gpus.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/mps_text.h"
#include "vgpu/node/node_state.h"

namespace vgpu::agent {
namespace {

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

// NVML unless told otherwise or the node has partitionable AMD GPUs: a few stat calls, no driver
// initialisation, because every prolog and epilog pays for this choice.
Result<std::unique_ptr<GpuBackend>> open_backend() {
  const std::string which = env_or("VGPU_BACKEND", "auto");
  if (which != "auto" && which != "nvml" && which != "amdgpu")
    return fail(ErrorCode::invalid_argument,
                fmt::format("VGPU_BACKEND='{}': expected auto, nvml or amdgpu", contract::printable(which)));
  auto sysfs = std::make_unique<RootedSysfs>(env_or("VGPU_SYSFS_ROOT", "/"));
  bool amd = which == "amdgpu";
  if (which == "auto")
    if (auto entries = sysfs->list("sys/bus/pci/drivers/amdgpu"))
      amd = std::ranges::any_of(*entries, [&](const std::string& e) {
        return sysfs->exists("sys/bus/pci/drivers/amdgpu/" + e + "/current_compute_partition");
      });
  if (amd) return std::unique_ptr<GpuBackend>(amdgpu::Backend::open(std::move(sysfs)));
  auto nvml = nvml::Backend::open(env_or("VGPU_NVML_LIBRARY", ""));
  if (!nvml) return fail(ErrorCode::unavailable, "NVML backend could not be created");
  return std::unique_ptr<GpuBackend>(std::make_unique<WholeGpuBackend>(std::move(nvml), Catalog::builtin()));
}

}  // namespace

bool signal_pidfile(const std::string& path, int signal) {
  std::ifstream in(path);
  long pid = 0;
  if (!(in >> pid) || pid <= 1) return false;
  return ::kill(static_cast<pid_t>(pid), signal) == 0;
}

namespace {

std::string stamped_line(std::string_view program, const std::string& line) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S} {}[{}]: {}\n", fmt::gmtime(std::time(nullptr)), program, ::getpid(), line);
}

void append_to(const NodeContext& ctx, const std::string& stamped) {
  if (FILE* f = std::fopen((ctx.node_dir() + "/vgpu.log").c_str(), "a")) {
    std::fputs(stamped.c_str(), f);
    std::fclose(f);
  }
}

}  // namespace

void NodeRuntime::log(const std::string& line) const {
  const std::string stamped = stamped_line(program_, line);
  std::fputs(stamped.c_str(), stderr);
  append_to(ctx_, stamped);
}

void NodeRuntime::append_to_node_log(const NodeContext& ctx, std::string_view program, const std::string& line) {
  append_to(ctx, stamped_line(program, line));
}

void NodeRuntime::poke_planner() const { (void)signal_pidfile(planner_pidfile(), SIGUSR1); }

Result<NodeContext> NodeRuntime::bare_context() {
  auto node = this_node_name();
  if (!node) return std::unexpected(node.error());
  NodeContext ctx;
  ctx.node = *node;
  ctx.state_dir = contract::resolve_state_dir(std::getenv("VGPU_STATE_DIR"));
  return ctx;
}

Result<std::unique_ptr<NodeRuntime>> NodeRuntime::from_environment(std::string_view program, Use use) {
  std::unique_ptr<NodeRuntime> rt(new NodeRuntime());
  rt->program_ = std::string(program);
  auto node = this_node_name();
  if (!node) return std::unexpected(node.error());
  rt->ctx_.node = *node;
  rt->ctx_.state_dir = contract::resolve_state_dir(std::getenv("VGPU_STATE_DIR"));
  if (use == Use::acting) {
    ::mkdir(rt->ctx_.state_dir.c_str(), 0755);
    ::mkdir(rt->ctx_.node_dir().c_str(), 0700);
  }
  const std::string policy_path = contract::resolve_policy_path(std::getenv("VGPU_POLICY"));
  auto policy = load_policy_file(policy_path);
  if (!policy) return std::unexpected(policy.error());
  rt->policy_ = std::move(*policy);
  // Class names resolve like profile names everywhere in this process, on this node's models.
  Catalog::install_classes(rt->policy_.site_types());
  LedgerStoreOptions store;
  store.read_only = use == Use::checking;
  rt->ledger_ = std::make_unique<LedgerStore>(rt->ctx_.node_dir(), store);
  auto backend = open_backend();
  if (!backend) return std::unexpected(backend.error());
  amdgpu::Backend* amd = dynamic_cast<amdgpu::Backend*>(backend->get());
  rt->backend_ = std::move(*backend);
  rt->slurm_ = make_command_slurm_client();
  rt->scrubber_ = make_command_scrubber();
  // Only nodes that serve a partition with viz pools run VMs (and pay for the squeue of the reap).
  for (const auto* part : node_partitions(rt->policy_, rt->ctx_.node))
    if (!part->viz_pools.empty() && !rt->viz_) rt->viz_ = make_command_viz_launcher(policy_path);
  // Each vendor's own way: MIG capability files, AMD render nodes (the adapters say why).
  const std::string confine = env_or("VGPU_CONFINE_DEVICES", "auto");
  const std::string device_root = env_or("VGPU_DEVICE_ROOT", "/");
  if (confine == "auto" || confine == (amd ? "render-nodes" : "capability-files"))
    rt->access_ = amd ? make_render_node_access(device_root, *amd)
                      : make_whole_gpu_access(device_root, *rt->backend_,
                                              make_capability_file_access(device_root, *rt->backend_));
  else if (confine != "off")
    return fail(ErrorCode::invalid_argument,
                fmt::format("VGPU_CONFINE_DEVICES='{}': expected auto, {} or off on this node's {} backend",
                            contract::printable(confine), amd ? "render-nodes" : "capability-files",
                            rt->backend_->backend_name()));
  // Shared instances run a CUDA MPS control daemon each (docs/shared-instances.md).
  if (!rt->policy_.share_types.empty())
    rt->mps_ = make_command_mps_control(env_or("VGPU_MPS_ROOT", std::string(kDefaultMpsRoot)));
  // Whether an epilog waits for its instances' scrub (docs/admin.md, "Scrub after the epilog").
  const std::string after_epilog = env_or("VGPU_SCRUB_AFTER_EPILOG", "off");
  if (after_epilog == "on") rt->cleanup_ = make_cleanup_process_handoff();
  else if (after_epilog != "off")
    return fail(ErrorCode::invalid_argument,
                fmt::format("VGPU_SCRUB_AFTER_EPILOG='{}': expected on or off", contract::printable(after_epilog)));
  rt->slurmd_pidfile_ = env_or("VGPU_SLURMD_PIDFILE", "/run/slurmd.pid");
  if (auto pos = rt->slurmd_pidfile_.find("%n"); pos != std::string::npos)
    rt->slurmd_pidfile_.replace(pos, 2, rt->ctx_.node);

  NodeRuntime* self = rt.get();
  rt->ctx_.policy = &rt->policy_;
  rt->ctx_.ledger = rt->ledger_.get();
  rt->ctx_.backend = rt->backend_.get();
  rt->ctx_.slurm = rt->slurm_.get();
  rt->ctx_.scrubber = rt->scrubber_.get();
  rt->ctx_.viz = rt->viz_.get();
  rt->ctx_.access = rt->access_.get();
  rt->ctx_.mps = rt->mps_.get();
  rt->ctx_.cleanup_handoff = rt->cleanup_.get();
  rt->ctx_.now = [] { return static_cast<std::int64_t>(std::time(nullptr)); };
  rt->ctx_.log = [self](const std::string& s) { self->log(s); };
  rt->publisher_ = make_split_publisher(rt->ctx_, [self] {
    if (signal_pidfile(self->slurmd_pidfile_, SIGHUP)) return true;
    self->log(
        fmt::format("vgpu: node {}: could not SIGHUP slurmd (pid file {})", self->ctx_.node, self->slurmd_pidfile_));
    return false;
  });
  rt->ctx_.publisher = rt->publisher_.get();
  return rt;
}

}  // namespace vgpu::agent
