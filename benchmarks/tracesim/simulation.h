// One simulator run: load and map a trace, then for each policy replay the arrival experiment for
// every seed and the timed replay once, plus the fluid bound shared by all policies.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrivals.h"
#include "packer.h"
#include "published_scores.h"
#include "replay.h"
#include "static_plan.h"
#include "task_mapping.h"

namespace vgpu::bench {

struct SimOptions {
  std::string trace_path;
  std::vector<PolicyKind> policies;
  int seeds = 10;
  // The cluster: the openb node list (each node's GPU count, CPU and host memory; every GPU is a
  // `model`) or, without one, `gpus` GPUs in nodes of `gpus_per_node` with no host limits.
  std::string nodes_path;
  int gpus = 6212;  // the openb cluster's GPU count (openb_node_list_gpu_node.csv)
  int gpus_per_node = 8;
  NodeChoice node_choice = NodeChoice::slurm;
  // Smallest shared instance the shared policy opens: whole-GPU instances measured best on every
  // openb workload (docs/benchmarks.md, "Shared instances").
  int share_min_slices = 7;
  double tune_ratio = 1.3;     // FGD's workload tuning (arrival_sequence)
  std::string published_path;  // FGD's published table, shown beside our numbers when given
  int replay_seeds = 0;        // replays with jittered arrivals beside the trace's own
  long long jitter_s = 600;    // each arrival moves by up to this many seconds either way
  // A multi-GPU task waiting longer than this reserves a node (ReplayOptions); < 0: never.
  long long reserve_after_s = -1;
  // The replay's start latency of the policies that reshape nodes (ReplayOptions); 0: none.
  long long start_latency_s = 0;
  bool latency_only_for_new_slots = false;  // ReplayOptions
  std::string model = "H100-80GB";
  int max_tasks = 0;  // > 0: only the first N rows of the trace (small samples for tests)
  int util_buckets = 200;
};

struct PolicyResult {
  PolicyKind policy = PolicyKind::planner;
  std::vector<ArrivalOutcome> per_seed;
  double arrival_seconds_per_seed = 0;  // wall time of one arrival experiment
  std::optional<ReplayOutcome> replay;  // only for traces with times: the trace's own arrivals
  std::vector<ReplayOutcome> jittered;  // the same with arrivals jittered, one per replay seed
  double replay_seconds = 0;
  std::string static_plan_arrivals;  // the static layout mix used, when policy is static
  std::string static_plan_replay;
};

struct SimResult {
  SimOptions options;
  std::string trace_path;
  bool has_times = false;
  int trace_rows = 0;
  MappingSummary mapping;
  long long capacity_slices = 0;
  int nodes = 0;
  bool host_constrained = false;
  std::vector<double> bound_milli_per_seed;                 // offline, fractional, with MIG rounding
  std::vector<long long> ceiling_milli_per_seed;            // online, perfect packing, with MIG rounding
  std::string workload;                                     // "default" for openb_pod_list_default.csv
  std::map<std::string, double> published_unallocated_pct;  // FGD's table for `workload`
  std::vector<PolicyResult> results;
};

// Demand per profile implied by the arrival experiment (instances expected when arrivals reach
// 100% of capacity) and by the replay (time-averaged, scaled to fill the cluster's slices).
std::vector<ProfileDemand> arrival_demand(const GpuModel& model, const std::vector<MappedTask>& tasks,
                                          long long capacity_milli);
std::vector<ProfileDemand> replay_demand(const GpuModel& model, const Trace& trace,
                                         const std::vector<MappedTask>& tasks, long long capacity_slices);

// The packer for a policy; `plan` is used only by the static policy, `typical` (FGD's target
// workload) only by fgd-twin (typical_shapes()) and fgd-mig (typical_mig_shapes()).
std::unique_ptr<Packer> make_packer(PolicyKind kind, const GpuModel& model, ClusterShape shape, const StaticPlan& plan,
                                    NodeChoice node_choice = NodeChoice::slurm, int share_min_slices = 7,
                                    const std::vector<TaskShape>& typical = {});

Result<SimResult> run_simulation(const SimOptions& options);
// The same on an already loaded trace (tests build small traces in memory).
Result<SimResult> run_simulation(const SimOptions& options, const Trace& trace);

}  // namespace vgpu::bench
