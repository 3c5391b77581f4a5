// The node scores of the schedulers FGD's paper publishes (Weng et al., "Beware of
// Fragmentation", USENIX ATC '23, §4, and the baselines of its simulator), written here from the
// paper's definitions so the twin can run them on its own resource model: FGD's numbers are
// reproduced, not only quoted, and the gap between them and ours splits into what the twin
// models differently and what the node choice costs.
//
// Their resource model is fractional GPUs without isolation: a node's free capacity is its free
// CPU and each GPU's free thousandths. Our shared policy with whole-GPU shared instances is that
// model exactly (a share joins a GPU with room; a whole-GPU task takes an idle GPU).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "task_mapping.h"

namespace vgpu::bench {

// One kind of task and how often it arrives: FGD's "typical pods", the target workload its
// fragmentation measure is taken against.
struct TaskShape {
  int gpus = 0;   // GPUs; 1 for a fraction of one
  int milli = 0;  // per GPU: < 1000 for a fraction, 1000 for whole GPUs
  long long cpu_milli = 0;
  double frequency = 0;  // share of the typical tasks, summing to 1
};

// The most common GPU task shapes (CPU, GPUs, thousandths) of `tasks` until they cover
// `coverage` of the GPU tasks, their frequencies renormalised; CPU-only tasks are left out (they
// fragment no GPU), as in FGD's default.
std::vector<TaskShape> typical_shapes(std::span<const MappedTask> tasks, double coverage = 0.95);
// The same with each sharing task counted as the dedicated MIG instance it is given on `model`
// (its profile's compute slices in thousandths of the GPU) instead of what it asked for.
std::vector<TaskShape> typical_mig_shapes(std::span<const MappedTask> tasks, const GpuModel& model,
                                          double coverage = 0.95);

// A profile's compute slices in thousandths of a GPU of `model`, as a dedicated instance takes them.
int profile_milli(const Profile& profile, const GpuModel& model);

// A node's free resources as both scores see them. GPUs beyond kMaxGpus are not modelled (openb's
// widest node has 8).
struct NodeFree {
  static constexpr int kMaxGpus = 8;
  long long cpu_milli = 0;
  std::array<std::int16_t, kMaxGpus> gpu_milli{};  // free thousandths per GPU
  int gpus = 0;
  [[nodiscard]] long long gpu_total() const;
};

// FGD's fragmentation of a node against the typical tasks: for each shape, the free GPU capacity
// that a task of that shape could not use here (all of it when the task does not fit the node at
// all; otherwise the GPUs with less room than it needs), weighted by the shape's frequency. FGD
// places a task where this grows least. Memoised: nodes repeat the same few states.
class Fragmentation {
 public:
  explicit Fragmentation(std::vector<TaskShape> typical) : typical_(std::move(typical)) {}
  double of(const NodeFree& node);

 private:
  std::vector<TaskShape> typical_;
  struct Key {
    long long cpu;
    std::array<std::int16_t, NodeFree::kMaxGpus> gpus;  // sorted, so GPU order does not matter
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, double, KeyHash> memo_;
};

// BestFit's score of a node after placing the task (lower is better): free CPU and free GPU,
// each normalised by the largest node's (128 CPUs, 8 GPUs, the simulator's constants) and
// weighted equally.
double best_fit_score(const NodeFree& after);

}  // namespace vgpu::bench
