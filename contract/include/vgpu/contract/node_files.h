// Where a node's contract files live and who "this node" is, from the process's surroundings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"

namespace vgpu::contract {

inline constexpr std::string_view kDefaultStateDir = "/var/lib/slurm-vgpu";
inline constexpr std::string_view kDefaultPolicyPath = "/etc/slurm-vgpu/policy.json";
inline constexpr std::string_view kDefaultVizConfigPath = "/etc/slurm-vgpu/viz.json";
inline constexpr std::string_view kDefaultClusterViewKeyPath = "/etc/slurm-vgpu/cluster-view.pub";

// $VGPU_STATE_DIR when set and absolute, else the compiled default. Read from the daemon's own
// environment, never from gres.conf, so the harness can move it under /tmp per run.
std::string resolve_state_dir(const char* env_value);
// $VGPU_POLICY / $VGPU_VIZ_CONFIG when set and not empty, else the default.
std::string resolve_policy_path(const char* env_value);
std::string resolve_viz_config_path(const char* env_value);

// Slurm does not hand the node name to node_config_load, so it is found the way slurmd found it:
// $VGPU_NODENAME (explicit override), $SLURMD_NODENAME (set by slurmstepd), slurmd's "-N <name>"
// (several slurmd on one host), else the short host name.
struct NodeNameSources {
  const char* vgpu_nodename = nullptr;
  const char* slurmd_nodename = nullptr;
  std::string_view cmdline;  // /proc/self/cmdline: NUL-separated arguments
  std::string_view hostname;
};
Result<std::string> resolve_node_name(const NodeNameSources& sources);

std::string advertisement_path(std::string_view state_dir, std::string_view node);
std::string job_record_path(std::string_view state_dir, std::string_view node, JobId job_id);

// Reads a small contract file (job record, advertisement, slurmd report, tally) as guarded_read.h
// says: no symlink followed, nothing that blocks, a regular file of root or this process's user
// that group and others cannot write; refuses anything larger than `limit` (slurmd must not stall
// on a runaway file). A missing file is ErrorCode::not_found.
Result<std::string> read_small_file(const std::string& path, std::size_t limit = 64 * 1024);

// The one reader of a Slurm job id as text (SLURM_JOB_ID, a jobs/<id>.json name, a viz domain's
// suffix, a hook request's job=): decimal digits only, no sign, no leading zero, 1..4294967295, so
// each id has one spelling and a file name maps back to one job. nullptr reads as no id.
std::optional<JobId> parse_job_id(std::string_view text);
std::optional<JobId> parse_job_id(const char* text);

}  // namespace vgpu::contract
