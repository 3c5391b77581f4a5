// Static MIG: every GPU is partitioned once, by a StaticPlan, before any task arrives. A task takes
// a free instance of its profile, or failing that the smallest larger one (upsizing, an advantage
// a real static site only has if users request the bigger type). Multi-GPU tasks need that many
// free full-GPU instances on one node. Nodes are chosen as for the other policies (NodeChoice).
#pragma once

#include "packer.h"
#include "static_plan.h"

namespace vgpu::bench {

class StaticPacker final : public Packer {
 public:
  StaticPacker(const GpuModel& model, ClusterShape shape, const StaticPlan& plan,
               NodeChoice node_choice = NodeChoice::slurm);

  [[nodiscard]] std::string_view name() const override { return "static"; }
  std::optional<Allocation> allocate(const MappedTask& task) override;
  void release(const Allocation& allocation) override;
  [[nodiscard]] std::vector<GpuLayout> running_layouts() const override;
  [[nodiscard]] int gpu_used_slices(int gpu) const override;
  [[nodiscard]] const StaticPlan& plan() const { return plan_; }

 private:
  struct Slot {
    int gpu = 0;
    const Profile* profile = nullptr;
    Placement where;
    bool busy = false;
  };
  std::size_t pidx(const Profile* p) const { return static_cast<std::size_t>(p - model_->profiles.data()); }
  int& node_free(int node, std::size_t profile) {
    return node_free_[static_cast<std::size_t>(node) * model_->profiles.size() + profile];
  }
  [[nodiscard]] int free_unheld(int node, std::size_t profile);
  Slot* take(int node, std::size_t profile);
  void mark(Slot& slot, bool busy);

  StaticPlan plan_;
  NodeChoice node_choice_;
  std::vector<Slot> slots_;                  // grouped by GPU, GPUs in order
  std::vector<std::size_t> gpu_first_slot_;  // gpu -> index of its first slot; size gpus+1
  std::vector<int> node_free_;               // node x profile -> free instances
  std::vector<int> total_free_;              // profile -> free instances
  std::vector<std::size_t> by_size_;         // profile indices, smallest first
};

}  // namespace vgpu::bench
