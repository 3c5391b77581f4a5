// Dynamic MIG: instances are created per task wherever the policy chooses, using the plugin's own
// GpuLayout rules (through LayoutStates). The node is chosen as production chooses it: by Slurm
// (slurm_node_choice.h) among the nodes where the policy can place the task (NodeChoice::slurm);
// NodeChoice::best instead lets the policy pick the best GPU of the whole cluster, an idealised
// scheduler that knows every GPU, kept to show what a smarter node choice would be worth.
// Policies, inside the node:
//   planner  - GpuLayout::best_placement on the GPU that loses the fewest options (plan_node's
//              rule); multi-GPU tasks take the node's empty GPUs.
//   firstfit - the lowest GPU where the profile fits, GpuLayout::first_fit_placement.
//   whole    - classic gres/gpu: every task gets whole GPUs (the full-GPU profile).
//   shared   - the planner, except that sharing tasks (a fraction of one GPU) take a share of a
//              shared MIG instance run under MPS (vgpu/core/shared_instance.h): the tightest open
//              instance with room, else a new instance sized for the share and placed by the
//              planner's rule. An instance is destroyed when its last share ends.
// With `node_weights` (policy planner.node_weights) every node's planner makes its node light in
// Slurm while any of its GPUs is in use and heavy while all are idle, so Slurm's choice packs; as
// in Slurm, the weights order the nodes for CPU-only jobs as well. With `node_preferences` (policy
// planner.node_features) the planners instead tag their nodes with Slurm
// features, "in use" (any GPU busy), "partly used GPU" (a GPU with some but not all of its compute
// slices held) and "no idle GPU", and each job prefers one (sbatch --prefer, set by the submit
// filter): jobs for a part of a GPU the partly used GPUs, other GPU jobs the nodes in use, CPU-only
// jobs the nodes with no idle GPU.
// Slurm tries a job with its preferred features first and without them when that fails
// (job_scheduler.c queues both), so a preference never keeps a job from starting.
// With `mig_on_demand` (planner and shared modes only) a multi-GPU task takes whole GPUs with MIG
// off (gpu_modes.h) instead of a 7g.80gb instance on each; a single-GPU full task keeps its 7g (it
// has no peer to reach, and its GPU stays ready for instances). A GPU switches mode only while
// empty; among the GPUs the rule above ranks alike, one already in the needed mode is taken first.
// With a PublishedScheduler the shared mode's node and GPU are chosen by FGD's or BestFit's score
// over the whole cluster instead (published_scores.h): their schedulers, run in this twin. In the
// planner mode the same score chooses where a dedicated instance goes (fgd-mig): among every GPU
// of every node where the planner's rule can place the task's profile.
#pragma once

#include <vector>

#include "layout_states.h"
#include "packer.h"
#include "published_scores.h"
#include "vgpu/core/shared_instance.h"

namespace vgpu::bench {

// A published scheduler choosing node and GPU by its own score, over every node with room.
enum class PublishedScheduler { none, fgd, bestfit };

// How the planners steer their nodes' Slurm weights (policy planner.node_weights): not at all, by
// use (in_use below idle), or by free capacity (base + per_free_gpu x free GPUs, so Slurm tries the
// fullest nodes first; the twin weighs free capacity in thousandths of a GPU, shares' room included).
enum class NodeWeighting { none, by_use, by_free_capacity };

class MigPacker final : public Packer {
 public:
  enum class Mode { planner, firstfit, whole, shared };
  // `share_min_slices`: the smallest shared instance the shared mode opens (default: whole GPUs,
  // measured best; docs/benchmarks.md).
  MigPacker(const GpuModel& model, ClusterShape shape, Mode mode, NodeChoice node_choice = NodeChoice::slurm,
            int share_min_slices = 7, NodeWeighting node_weights = NodeWeighting::none, bool node_preferences = false,
            bool mig_on_demand = false);
  // FGD's or BestFit's choice in the shared mode with whole-GPU shared instances, which is their
  // resource model (fractional GPUs without isolation), or in the planner mode with dedicated
  // instances; `typical`: FGD's target workload.
  MigPacker(const GpuModel& model, ClusterShape shape, PublishedScheduler scheduler, std::vector<TaskShape> typical,
            Mode mode = Mode::shared);

  [[nodiscard]] std::string_view name() const override;
  std::optional<Allocation> allocate(const MappedTask& task) override;
  void release(const Allocation& allocation) override;
  [[nodiscard]] std::vector<GpuLayout> running_layouts() const override;
  [[nodiscard]] int gpu_used_slices(int gpu) const override;
  [[nodiscard]] GpuMode gpu_mode(int gpu) const override { return modes_.mode(gpu); }
  [[nodiscard]] long long mode_switches() const override { return modes_.switches(); }
  [[nodiscard]] std::size_t distinct_layouts() const { return states_.size(); }

 private:
  struct OpenShared {
    Placement where;
    SharedInstance instance;
  };

  const PlacementChoice& choice(StateId s, int profile_index);
  bool fits_somewhere(int profile_index);
  // The GPU of `node` the policy would use for the profile, or -1.
  int gpu_in_node(int node, int profile_index);
  bool node_can_place(int node, const MappedTask& task, int profile_index);
  int choose_node(const MappedTask& task, auto&& usable);
  std::optional<Allocation> allocate_one(const MappedTask& task, int profile_index);
  std::optional<Allocation> allocate_node(const MappedTask& task);
  std::optional<Allocation> allocate_share(const MappedTask& task);
  std::optional<Allocation> allocate_published(const MappedTask& task);
  std::optional<Allocation> allocate_published_instance(const MappedTask& task);
  // The published scheduler's score for a node going from fragmentation `frag_before` to `after`
  // once `task` is placed on it (lower is better).
  double published_score(double frag_before, NodeFree after, const MappedTask& task);
  // Opens a shared instance for a first share of `milli` on `gpu`, or joins its tightest one.
  Allocation share_on(int gpu, const MappedTask& task, int milli);
  // The task's whole GPUs: the lowest empty unheld GPUs of `node`, with MIG on demand those already
  // whole first (the caller checked there are enough).
  Allocation take_empty_gpus(int node, const MappedTask& task);
  // Puts `gpu` in `mode` before work is placed on it; true when that took a switch.
  bool enter_mode(int gpu, GpuMode mode);
  // Free thousandths of `gpu` as a fractional-GPU scheduler sees it (0 while held).
  [[nodiscard]] int free_milli(int gpu) const;
  [[nodiscard]] NodeFree node_free(int node) const;
  // The open shared instance of `node` a share of `milli` joins, as (gpu, index), or gpu -1.
  std::pair<int, int> shared_slot_in_node(int node, int milli);
  void refresh_share_room(int node);
  void holds_changed(int node) override { refresh_share_room(node); }
  [[nodiscard]] int empty_unheld_gpus(int node) const;
  void set_state(int gpu, StateId next);

  Mode mode_;
  NodeChoice node_choice_;
  PublishedScheduler published_ = PublishedScheduler::none;
  Fragmentation fragmentation_{{}};
  NodeWeighting node_weights_;
  bool node_preferences_;
  int share_min_slices_;
  LayoutStates states_;
  int full_index_;
  std::vector<StateId> gpu_state_;
  std::vector<int> node_free_slices_;
  std::vector<int> node_empty_gpus_;
  std::vector<int> state_population_;            // GPUs currently in each layout
  std::vector<std::vector<OpenShared>> shared_;  // per GPU: its open shared instances
  std::vector<int> node_share_room_;             // per node: most room (milli) of any open shared instance
  bool mig_on_demand_;
  GpuModes modes_;
};

}  // namespace vgpu::bench
