// The real ports of the node flows (vgpu/node/ports.h): Slurm's own commands, vgpu-scrub and
// vgpu-viz, each run without a shell. Wired by NodeRuntime; the flows never see these types.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/node/ports.h"
#include "vgpu/node/wide_booking.h"

namespace vgpu::amdgpu {
class Backend;
}

namespace vgpu::agent {

// squeue/scontrol/scancel from PATH (or $VGPU_SLURM_BIN). With $VGPU_CLUSTER_VIEW set, demand,
// the node's GRES and its jobs come from the cluster view (cluster_view_source.h: published once
// per period for the whole cluster by `vgpu-planner --publish-view`/`--serve-view`) instead of
// every node asking slurmctld; with $VGPU_DEMAND_FILE set, pending jobs from that file.
std::unique_ptr<SlurmClient> make_command_slurm_client();
// This node's Slurm name by the contract's one rule (contract/node_files.h) from the environment
// and the host name: a hook or planner is never slurmd, so its own command line names no node.
Result<std::string> this_node_name();
// The pending-job listing in the format parse_pending_jobs() reads (one squeue call).
Result<std::string> squeue_pending_text();
// The cluster view's two queries (vgpu/node/cluster_view_snapshot.h): one squeue, one scontrol.
Result<std::string> squeue_view_text();
Result<std::string> scontrol_nodes_text();
// The demand publisher's Slurm reservations for starving wide jobs (vgpu/node/wide_booking.h):
// reads every node, the running jobs and the reservations (three calls), then books or deletes
// what plan_wide_bookings decides. One line per action or problem, for the log. The three calls
// are made only while a wide job starves or reservations of ours may exist (`ours_may_exist`,
// true at start so that a restarted publisher cleans up after its predecessor).
// A create or bind Slurm refuses is tried again as `retries` says, not every period.
std::vector<std::string> book_wide_reservations(std::string_view pending_text, std::int64_t reserve_after_s,
                                                bool& ours_may_exist, BookingRetries& retries);

// Runs vgpu-scrub ($VGPU_SCRUB or the installed path) with CUDA_VISIBLE_DEVICES=<mig uuid>.
std::unique_ptr<Scrubber> make_command_scrubber();

// The epilog's cleanup hand-off (VGPU_SCRUB_AFTER_EPILOG=on): `program` (by default this very
// program, whichever hook or planner runs the epilog) started as `vgpu-cleanup --finish-released
// GPU:GI...` (argv[0] names the process, not the file), detached, with each instance's cleanup lock
// on descriptor 3, 4, ...; such a program answers that with finish_released_if_asked()
// (hook_work.h).
inline constexpr std::string_view kCleanupProcessName = "vgpu-cleanup";
inline constexpr std::string_view kFinishReleasedFlag = "--finish-released";
std::unique_ptr<CleanupHandoff> make_cleanup_process_handoff(std::string program = "/proc/self/exe");

// Runs $VGPU_VIZ (default: vgpu-viz from PATH; its config from $VGPU_VIZ_CONFIG) with the node's
// policy file, where the viz pools are declared.
std::unique_ptr<VizLauncher> make_command_viz_launcher(std::string policy_path);

// Runs nvidia-cuda-mps-control ($VGPU_MPS_CONTROL or from PATH): one control daemon per shared
// instance, its pipe and log directories under `root` (kDefaultMpsRoot on a node).
std::unique_ptr<MpsControl> make_command_mps_control(std::string root);

// Confines each MIG instance to its job's user through the driver's capability files under `root`
// ("/" on a node, a fake driver's tree in tests): <root>/proc/driver/nvidia-caps/mig-minors,
// <root>/proc/devices and <root>/dev/nvidia-caps/ (capability_files.cpp says why files).
std::unique_ptr<InstanceAccess> make_capability_file_access(std::string root, GpuReader& gpus);

// Confines each whole GPU (MIG off) to its job's user through <root>/dev/nvidia<minor>, where
// <root>/proc/driver/nvidia/params says ModifyDeviceFiles: 0, and hands MIG instances to `mig`
// (whole_gpu_access.cpp says why that file and that setting).
std::unique_ptr<InstanceAccess> make_whole_gpu_access(std::string root, GpuReader& gpus,
                                                      std::unique_ptr<InstanceAccess> mig);

// Confines each AMD partition to its job's user through its render node under `root`
// (<root>/dev/dri/renderD<N>; render_node_access.cpp says why that file).
std::unique_ptr<InstanceAccess> make_render_node_access(std::string root, amdgpu::Backend& backend);

}  // namespace vgpu::agent
