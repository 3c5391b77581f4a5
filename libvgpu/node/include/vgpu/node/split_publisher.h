// How a node's new split reaches slurmctld: per Slurm release (docs/slurm.md).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "vgpu/contract/slurmd_report.h"
#include "vgpu/node/context.h"
#include "vgpu/node/node_state.h"

namespace vgpu {

// How a node's new split reaches slurmctld (docs/slurm.md, "How a split reaches slurmctld"):
//   before 23.11  slurmd re-registers on SIGHUP and gres_vgpu.so reports advertisement.json; the
//                 permanent zero-count type makes slurmctld take a same-total split;
//   23.11 on      slurmctld ignores a same-total split at registration unless the node has a
//                 zero-count type, so the split is set with `scontrol update NodeName=..
//                 Gres=..` (same total, every type listed). slurmctld still applies slurmd's own
//                 report at its restart and while a zero-count type exists, deleting what the
//                 report lacks (running jobs' allocations included), so the update is sent only
//                 once slurmd reports the same split: the plugin follows advertisement.json inside
//                 slurmd and records what it reports in slurmd-report.json.
// The controller's release is asked before the first handover, again after recheck_s and after
// any failed handover, so an upgrade of slurmctld across 23.11 is followed.
enum class SplitHandover { sighup, scontrol_update };
SplitHandover split_handover_for(const SlurmVersion& controller);

// What slurmd reports right now, by the plugin's own record (contract/slurmd_report.h); none before
// 23.11 or before the plugin first used an advertisement.
std::optional<contract::SlurmdReport> slurmd_report(const NodeContext& ctx);

// The node's constant vgpu total: slurmd's report's when there is one (slurmctld's sum can run
// above it for a while, docs/slurm.md), else slurmctld's split's (node_total_of(NodeGres)).
std::optional<int> node_total_of(const NodeContext& ctx, const NodeGres& slurm);
struct SplitPublisherTiming {
  int recheck_s = 600;
  int slurmd_report_ms = 5000;  // how long to wait for slurmd to report a new split
  // Before 23.11, how long a SIGHUP waits for the prologs of jobs slurmctld shows here unclaimed
  // (launch_watch.h). Only where a cluster view tells the planner its node's jobs without a query.
  int launch_wait_ms = 10000;
};
std::unique_ptr<SplitPublisher> make_split_publisher(NodeContext& ctx, std::function<bool()> signal_slurmd,
                                                     SplitPublisherTiming timing = {});

}  // namespace vgpu
