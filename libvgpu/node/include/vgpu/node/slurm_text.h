// Parsers for the few Slurm command outputs the node agent reads. Pure, so every format corner
// (arrays, multi-partition jobs, index suffixes) is unit-tested without a cluster.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/gres_request.h"

namespace vgpu {

// The squeue format the agent asks for; parse_pending_jobs() expects exactly these fields (or the
// first six alone, as a demand file of release 0.4 has them): id, partitions, priority, submit
// time, reason, GRES per node, node count, user, time limit, reservation.
inline constexpr std::string_view kSqueuePendingFormat = "%i|%P|%Q|%V|%r|%b|%D|%u|%l|%v";

// Reservations the demand publisher books for starving wide jobs are named with this prefix and
// the job id; nothing else of ours creates Slurm reservations.
inline constexpr std::string_view kWideReservationPrefix = "vgpu-wide-";

struct PendingJob {
  std::string id;                       // "42", "42_7", "42_[1-5]"
  std::vector<std::string> partitions;  // a job may list several
  std::int64_t priority = 0;
  std::int64_t submit_time = 0;  // Unix seconds, UTC
  std::string reason;
  std::vector<GresRequest> vgpu;  // empty: not a vgpu job
  int array_tasks = 1;            // pending tasks this line stands for
  int nodes = 1;                  // nodes the job needs (its minimum)
  std::string user;
  std::optional<std::int64_t> time_limit_s;  // nullopt: UNLIMITED or not set
  std::string reservation;                   // empty: none
};

// Lines that fail to parse are reported in `errors` and skipped, never fatal: one odd job must
// not stop the node from planning for the others.
struct PendingJobs {
  std::vector<PendingJob> jobs;
  std::vector<std::string> errors;
};
PendingJobs parse_pending_jobs(std::string_view squeue_output);

// Jobs that wait on something other than resources gain nothing from reshaping.
bool waits_for_resources(const PendingJob& job);

// Typed counts of one GRES name from scontrol's "Gres=" / "GresUsed=" values:
// "vgpu:never:0,vgpu:free:54,vgpu:1g.10gb:2(IDX:N/A)" -> {never:0, free:54, 1g.10gb:2}.
Result<std::map<std::string, int>> parse_gres_counts(std::string_view value, std::string_view gres_name);

struct NodeGres {
  std::map<std::string, int> configured;  // from Gres=
  std::map<std::string, int> used;        // from GresUsed=
  std::string state;                      // "IDLE", "MIXED+DRAIN", ...
  std::optional<std::uint32_t> weight;    // from Weight=, when shown
  // From AvailableFeatures=, when shown (planner.node_features keeps its two in it and in
  // ActiveFeatures); empty for "(null)".
  std::optional<std::vector<std::string>> features;
  // Set when read from the published cluster view: the controller's clock when it was taken
  // (what happened here since is not in it). None: asked of slurmctld just now.
  std::optional<std::int64_t> published_at;
};
// One line of `scontrol show node -o -d <node>`.
Result<NodeGres> parse_scontrol_node(std::string_view line, std::string_view gres_name);

// The value of `scontrol update NodeName=<n> Gres=<value>` that sets a node's split of `gres_name`
// to `counts` (zero counts left out) padded with the `free` type to the constant `total`:
// ({1g.10gb:2}, 14) -> "vgpu:free:12,vgpu:1g.10gb:2". An error when the counts exceed the total
// or name the padding type (slurmctld would drain a node whose total changes).
Result<std::string> gres_split_value(std::string_view gres_name, const std::map<std::string, int>& counts, int total);

// A Slurm release as slurmctld reports it: "SLURM_VERSION = 26.05.3" in `scontrol show config`.
struct SlurmVersion {
  int major = 0, minor = 0, micro = 0;
  [[nodiscard]] int release() const { return major * 100 + minor; }  // 2605
  auto operator<=>(const SlurmVersion&) const = default;
};
Result<SlurmVersion> parse_slurm_version(std::string_view dotted);
Result<SlurmVersion> parse_show_config_version(std::string_view show_config);
// The first controller's address (or host name) in `scontrol show config`: where the cluster view's
// publisher runs by default (VGPU_CLUSTER_VIEW=service).
Result<std::string> parse_show_config_controller(std::string_view show_config);

// The name scancel and `scontrol update` need for job `job`, from `scontrol -o show job <job>`:
// "<ArrayJobId>_<ArrayTaskId>" for an array task (slurmctld refuses a task's own id as
// "invalid", job_mgr.c job_str_signal), else the id itself.
std::string job_name_for_signals(std::uint32_t job, std::string_view scontrol_show_job_line);

// One job id per line (`squeue -h -o %A`); `what` names the command in errors.
Result<std::set<std::uint32_t>> parse_job_id_lines(std::string_view output, std::string_view what);

// The job id of `scontrol pidinfo <pid>`'s answer ("Slurm JobId=42 ends at ..."; scontrol/info_job.c
// of 22.05 to 26.05 prints it so).
Result<std::uint32_t> parse_pidinfo_job(std::string_view output);

// "2026-11-22T20:50:01" as UTC Unix seconds.
Result<std::int64_t> parse_slurm_time(std::string_view text);

// A duration as squeue prints a time limit ("5:00", "1:00:00", "2-00:00:00", a bare number of
// minutes), in seconds; nullopt for "UNLIMITED", "INFINITE", "NOT_SET" and "N/A".
Result<std::optional<std::int64_t>> parse_slurm_duration(std::string_view text);

}  // namespace vgpu
