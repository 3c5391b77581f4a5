// The node's metrics in Prometheus's text format (version 0.0.4), written by the planner after
// every round to a file node_exporter's textfile collector serves (VGPU_METRICS_FILE; docs/metrics.md).
// A file rather than an HTTP endpoint: no listening socket in a root daemon, and sites already
// scrape node_exporter on every node.
//
// Gauges come from the ledger, the advertisement and slurmctld's view as the round left them;
// counters and the round histogram from what the planner accumulated since it started (Prometheus
// handles the reset when it restarts).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/contract/hook_tally.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/ports.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

struct Histogram {
  std::vector<double> upper_bounds;   // ascending; +Inf is implied
  std::vector<std::uint64_t> counts;  // per bucket (not cumulative), one more than the bounds
  double sum = 0;
  std::uint64_t count = 0;
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
};

// What the planner daemon accumulates across rounds.
struct PlannerMetrics {
  Histogram round_seconds{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
  std::uint64_t rounds_ok = 0;
  std::uint64_t rounds_failed = 0;
  std::int64_t last_round_unix = 0;
  // Compute-slice-seconds held by jobs and available, sampled at each round: the interval since
  // the previous round is charged with the occupancy this round found.
  double used_slice_seconds = 0;
  double available_slice_seconds = 0;
  std::int64_t last_sample_unix = 0;
  // NVML calls of the planner's own that failed, by entry point ("nvmlGpmMigSampleGet").
  std::map<std::string, std::uint64_t> nvml_errors;

  // Counts the failed calls an activity sample reports.
  void record_activity_errors(const ActivitySample& sample);
  // A round ended at `now` after `seconds`; `ledger` is the node's ledger after it (if readable).
  void record_round(bool ok, double seconds, std::int64_t now, const Ledger* ledger);
};

struct NodeMetricsInput {
  std::string node;
  const Ledger* ledger = nullptr;                 // null: unreadable, only the planner's own metrics
  const PolicyFile* policy = nullptr;             // for stranded slices (the node's allowed profiles)
  std::map<std::string, int> advertised;          // the advertisement file's counts
  std::optional<NodeGres> slurm;                  // slurmctld's configured / used split, when it answered
  bool handover_pending = false;                  // a shrink slurmctld has not confirmed yet
  int split_mismatch_rounds = 0;                  // rounds in a row slurmctld's split differed
  std::optional<ClusterViewStatus> cluster_view;  // where the planner reads a published view
  const PlannerMetrics* planner = nullptr;
  const contract::HookTally* hooks = nullptr;  // the prolog's and epilog's runs (hook_tally_store.h)
  const ActivitySample* activity = nullptr;    // utilisation since the previous round, where sampled
};

std::string render_node_metrics(const NodeMetricsInput& in);

// Free compute slices of one GPU that no profile the node's partitions allow can use any more:
// what is left after filling the free space with the smallest allowed profile that still fits,
// again and again. `layout_slots`: instances and plan slots on that GPU.
int stranded_compute_slices(const GpuModel& model, const std::vector<const Profile*>& allowed,
                            const std::vector<std::pair<const Profile*, Placement>>& layout_slots);

}  // namespace vgpu
