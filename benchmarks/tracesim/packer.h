// A placement policy over a cluster of identical MIG GPUs grouped into nodes: it grants a task its
// instances (all on one node) or refuses, and takes them back when the task ends.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_modes.h"
#include "task_mapping.h"
#include "vgpu/core/gpu_layout.h"

namespace vgpu::bench {

// One node: its GPUs and the host resources tasks also need (FGD's cpu_milli and memory_mib).
// Zero host resources mean unconstrained: the uniform clusters of the replay.
struct NodeShape {
  int gpus = 0;
  long long cpu_milli = 0;
  long long memory_mib = 0;
};

class ClusterShape {
 public:
  ClusterShape() = default;
  // `gpus` GPUs in nodes of `gpus_per_node` (the last node holds the remainder), host unconstrained.
  ClusterShape(int gpus, int gpus_per_node);
  explicit ClusterShape(std::vector<NodeShape> nodes);

  [[nodiscard]] int gpus() const { return gpus_; }
  [[nodiscard]] int nodes() const { return static_cast<int>(nodes_.size()); }
  [[nodiscard]] const NodeShape& node(int n) const { return nodes_[static_cast<std::size_t>(n)]; }
  [[nodiscard]] int node_of(int gpu) const { return node_of_gpu_[static_cast<std::size_t>(gpu)]; }
  [[nodiscard]] int first_gpu(int node) const { return first_gpu_[static_cast<std::size_t>(node)]; }
  [[nodiscard]] int end_gpu(int node) const { return first_gpu_[static_cast<std::size_t>(node) + 1]; }
  [[nodiscard]] int widest_node() const;
  [[nodiscard]] bool host_constrained() const { return host_constrained_; }

 private:
  std::vector<NodeShape> nodes_;
  std::vector<int> first_gpu_;  // size nodes + 1
  std::vector<int> node_of_gpu_;
  bool host_constrained_ = false;
  int gpus_ = 0;
};

struct AllocationPart {
  int gpu = 0;
  const Profile* profile = nullptr;  // may be larger than the task's profile (static upsizing)
  Placement where;
  int share_milli = 0;  // > 0: a share of the shared (MPS) instance at `where`, not the instance
  // The physical GPU with MIG off (GpuMode::whole), no instance. `profile` and `where` are then the
  // full-GPU profile's: a whole GPU is counted as every compute slice of its GPU, as a 7g is.
  bool mig_off = false;
  bool switched_mode = false;  // its GPU changed MIG mode for it (legal only while it was empty)
};

struct Allocation {
  int node = -1;
  long long cpu_milli = 0;  // host resources taken on `node`
  long long memory_mib = 0;
  std::vector<AllocationPart> parts;  // empty for a CPU-only task
  // Compute slices of the instances this allocation alone holds (shares hold none of their own).
  [[nodiscard]] int slices() const {
    int s = 0;
    for (const auto& p : parts)
      if (p.share_milli == 0) s += p.profile->compute_slices;
    return s;
  }
};

class Packer {
 public:
  virtual ~Packer() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Places `task` (CPU-only, sharing or whole_gpu) or returns nullopt; never moves running
  // instances.
  virtual std::optional<Allocation> allocate(const MappedTask& task) = 0;
  virtual void release(const Allocation& allocation) = 0;
  // What is running now, rebuilt as real GpuLayouts (one per GPU): for invariant checks.
  [[nodiscard]] virtual std::vector<GpuLayout> running_layouts() const = 0;
  // Compute slices held on one GPU now (instances, shared or not).
  [[nodiscard]] virtual int gpu_used_slices(int gpu) const = 0;
  // MIG mode on demand (gpu_modes.h): a GPU's mode now and the switches made so far. Policies
  // without it keep every GPU partitioned.
  [[nodiscard]] virtual GpuMode gpu_mode(int /*gpu*/) const { return GpuMode::partitioned; }
  [[nodiscard]] virtual long long mode_switches() const { return 0; }

  // A reservation for a starving wide task (the replay's; vgpu/core/wide_reservation.h): held GPUs
  // take no new work, as a node's planner advertises nothing new on GPUs it holds back. Replaces
  // the previous holds; an empty list lifts them all. The holder is placed with no hold in force.
  virtual void hold(const std::vector<int>& gpus);
  [[nodiscard]] bool held(int gpu) const { return held_[static_cast<std::size_t>(gpu)] != 0; }
  [[nodiscard]] bool node_has_holds(int node) const { return node_holds_[static_cast<std::size_t>(node)] > 0; }

  [[nodiscard]] const ClusterShape& shape() const { return shape_; }
  [[nodiscard]] long long allocated_slices() const { return allocated_slices_; }
  [[nodiscard]] long long capacity_slices() const {
    return static_cast<long long>(shape_.gpus()) * model_->compute_slices;
  }
  [[nodiscard]] const GpuModel& model() const { return *model_; }

 protected:
  Packer(const GpuModel& model, ClusterShape shape);
  // Host resources: whether `task` fits `node`'s free CPU and memory, and taking/returning them.
  [[nodiscard]] bool host_fits(int node, const MappedTask& task) const;
  void take_host(int node, const MappedTask& task, Allocation& into);
  void return_host(const Allocation& allocation);
  // Free CPU of a node as Slurm's node choice weighs it (slurm_node_choice.h).
  [[nodiscard]] long long free_cpu_milli(int node) const { return cpu_free_[static_cast<std::size_t>(node)]; }
  // A CPU-only task: Slurm's own choice among the nodes with room; no GPU policy is involved.
  std::optional<Allocation> allocate_host_only(const MappedTask& task);
  // A node's holds changed: packers that cache what a node offers refresh it.
  virtual void holds_changed(int /*node*/) {}

  const GpuModel* model_;
  ClusterShape shape_;
  long long allocated_slices_ = 0;

 private:
  std::vector<long long> cpu_free_, mem_free_;
  std::vector<char> held_;       // per GPU
  std::vector<int> node_holds_;  // per node: held GPUs
};

// Who picks the node: Slurm, among the nodes where the policy can place the task (production), or
// the policy itself over every GPU of the cluster (an idealised scheduler, for comparison).
enum class NodeChoice { slurm, best };

// planner_weighted / shared_weighted: the same with the planners steering node weights;
// planner_preferring / shared_preferring: with node features and per-job preferences instead
// (mig_packer.h); planner_filling / shared_filling: node weights by free capacity instead (Slurm
// tries the fullest nodes first); planner_preferring_filling / shared_preferring_filling: both.
// fgd_twin / bestfit_twin: the published schedulers FGD's paper compares, run in this twin on
// their own resource model (fractional GPUs, no isolation): the check of the twin against their
// published numbers, not policies of ours.
// planner_on_demand / shared_on_demand: the same with MIG mode on demand (gpu_modes.h): multi-GPU
// tasks take whole GPUs with MIG off instead of a 7g.80gb instance on each GPU.
// fgd_mig: FGD's choice per job (its score over every node) with dedicated MIG instances, its
// typical shapes rounded to their profiles: what a fragmentation-aware choice in slurmctld would
// be worth for dedicated instances. No Slurm lever makes it; a reference, not a policy.
enum class PolicyKind {
  whole,
  static_mig,
  firstfit,
  planner,
  shared,
  planner_weighted,
  shared_weighted,
  planner_preferring,
  shared_preferring,
  planner_filling,
  shared_filling,
  planner_preferring_filling,
  shared_preferring_filling,
  fgd_twin,
  bestfit_twin,
  fgd_mig,
  planner_on_demand,
  shared_on_demand
};

std::string_view policy_name(PolicyKind kind);
// Whether the policy changes a node's layout for its tasks (instances made on demand), so a start
// waits for the node's planner and Slurm (ReplayOptions::start_latency_s); static and whole do not,
// nor do the published schedulers (fractional GPUs need no instance made).
bool reshapes_nodes(PolicyKind kind);
// Whether the policy grants fractions of a GPU (shares), which MIG's rounding bounds do not hold.
bool grants_shares(PolicyKind kind);
Result<PolicyKind> parse_policy(std::string_view name);

}  // namespace vgpu::bench
