// Builds the node agent's context from the process environment (as slurmd hands it to the
// Prolog/Epilog, or as the systemd unit sets it for the planner) and owns the real adapters.
//   VGPU_NODENAME / SLURMD_NODENAME   this node's Slurm name (else the short host name)
//   VGPU_STATE_DIR                    default /var/lib/slurm-vgpu
//   VGPU_POLICY                       default /etc/slurm-vgpu/policy.json
//   VGPU_SLURMD_PIDFILE               slurmd's pid file, "%n" = node name; default /run/slurmd.pid
//   VGPU_NVML_LIBRARY                 libnvidia-ml.so.1 to load (tests: the fake)
//   VGPU_VIZ, VGPU_VIZ_CONFIG         vgpu-viz and its node config, on nodes with viz pools
//   VGPU_CONFINE_DEVICES              "capability-files" (default): each instance's capability
//                                     files belong to its job's user; "off": not confined
//   VGPU_DEVICE_ROOT                  where the driver's /dev and /proc are (default /; tests: a
//                                     fake driver's tree)
//   VGPU_SCRUB_AFTER_EPILOG           "on": an epilog hands its job's released instances to a
//                                     detached cleanup process and returns; "off" (default): it
//                                     scrubs and destroys them before it returns
#pragma once

#include <memory>
#include <string>

#include "vgpu/node/context.h"
#include "vgpu/node/split_publisher.h"

namespace vgpu::agent {

class NodeRuntime {
 public:
  // `checking`: for a command that only looks (vgpu-planner --verify): it creates no directory and
  // its ledger store is read-only, so a ledger it cannot read is reported, not set aside.
  enum class Use { acting, checking };
  static Result<std::unique_ptr<NodeRuntime>> from_environment(std::string_view program, Use use = Use::acting);
  // Only the node's name and state directory, from the same environment: for what needs no more
  // (the hook tally) when from_environment() fails (no NVML, an unreadable policy).
  static Result<NodeContext> bare_context();
  NodeContext& context() { return ctx_; }
  void log(const std::string& line) const;
  // The same line log() writes to <node dir>/vgpu.log ("<time> <program>[<pid>]: <line>"), for a
  // process whose runtime could not come up and whose stderr goes nowhere.
  static void append_to_node_log(const NodeContext& ctx, std::string_view program, const std::string& line);
  // Pokes the node's planner daemon (SIGUSR1) so freed space is re-planned at once.
  void poke_planner() const;
  std::string planner_pidfile() const { return ctx_.node_dir() + "/planner.pid"; }

 private:
  NodeRuntime() = default;
  std::string program_;
  PolicyFile policy_;
  std::unique_ptr<LedgerStore> ledger_;
  std::unique_ptr<GpuBackend> backend_;
  std::unique_ptr<SlurmClient> slurm_;
  std::unique_ptr<Scrubber> scrubber_;
  std::unique_ptr<VizLauncher> viz_;
  std::unique_ptr<InstanceAccess> access_;
  std::unique_ptr<SplitPublisher> publisher_;
  std::unique_ptr<MpsControl> mps_;
  std::unique_ptr<CleanupHandoff> cleanup_;
  std::string slurmd_pidfile_;
  NodeContext ctx_;
};

// Reads a pid from a file and signals it; false when there is no such live process.
bool signal_pidfile(const std::string& path, int signal);

}  // namespace vgpu::agent
