// A placement policy over a cluster of identical MIG GPUs grouped into nodes: it grants a task its
// instances (all on one node) or refuses, and takes them back when the task ends.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "task_mapping.h"
#include "vgpu/core/gpu_layout.h"

namespace vgpu::bench {

struct ClusterShape {
  int gpus = 0;
  int gpus_per_node = 8;  // the last node holds the remainder when gpus is not a multiple
  [[nodiscard]] int nodes() const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
  [[nodiscard]] int node_of(int gpu) const { return gpu / gpus_per_node; }
  [[nodiscard]] int first_gpu(int node) const { return node * gpus_per_node; }
  [[nodiscard]] int end_gpu(int node) const {
    int end = first_gpu(node) + gpus_per_node;
    return end < gpus ? end : gpus;
  }
};

struct AllocationPart {
  int gpu = 0;
  const Profile* profile = nullptr;  // may be larger than the task's profile (static upsizing)
  Placement where;
};

struct Allocation {
  std::vector<AllocationPart> parts;
  [[nodiscard]] int slices() const {
    int s = 0;
    for (const auto& p : parts) s += p.profile->compute_slices;
    return s;
  }
};

class Packer {
 public:
  virtual ~Packer() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Places `task` (sharing or whole_gpu) or returns nullopt; never moves running instances.
  virtual std::optional<Allocation> allocate(const MappedTask& task) = 0;
  virtual void release(const Allocation& allocation) = 0;
  // What is running now, rebuilt as real GpuLayouts (one per GPU): for invariant checks.
  [[nodiscard]] virtual std::vector<GpuLayout> running_layouts() const = 0;

  [[nodiscard]] const ClusterShape& shape() const { return shape_; }
  [[nodiscard]] long long allocated_slices() const { return allocated_slices_; }
  [[nodiscard]] long long capacity_slices() const {
    return static_cast<long long>(shape_.gpus) * model_->compute_slices;
  }
  [[nodiscard]] const GpuModel& model() const { return *model_; }

 protected:
  Packer(const GpuModel& model, ClusterShape shape) : model_(&model), shape_(shape) {}
  const GpuModel* model_;
  ClusterShape shape_;
  long long allocated_slices_ = 0;
};

enum class PolicyKind { whole, static_mig, firstfit, planner };

std::string_view policy_name(PolicyKind kind);
Result<PolicyKind> parse_policy(std::string_view name);

}  // namespace vgpu::bench
