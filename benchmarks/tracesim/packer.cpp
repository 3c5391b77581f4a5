#include "packer.h"

#include <algorithm>

#include "slurm_node_choice.h"

namespace vgpu::bench {

ClusterShape::ClusterShape(int total_gpus, int gpus_per_node) {
  std::vector<NodeShape> nodes;
  for (int left = total_gpus; left > 0; left -= gpus_per_node) nodes.push_back({std::min(left, gpus_per_node), 0, 0});
  *this = ClusterShape(std::move(nodes));
}

ClusterShape::ClusterShape(std::vector<NodeShape> nodes) : nodes_(std::move(nodes)) {
  first_gpu_.push_back(0);
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    for (int g = 0; g < nodes_[n].gpus; ++g) node_of_gpu_.push_back(static_cast<int>(n));
    first_gpu_.push_back(first_gpu_.back() + nodes_[n].gpus);
    if (nodes_[n].cpu_milli > 0 || nodes_[n].memory_mib > 0) host_constrained_ = true;
  }
  gpus_ = first_gpu_.back();
}

int ClusterShape::widest_node() const {
  int w = 0;
  for (const auto& n : nodes_) w = std::max(w, n.gpus);
  return w;
}

Packer::Packer(const GpuModel& model, ClusterShape shape) : model_(&model), shape_(std::move(shape)) {
  for (int n = 0; n < shape_.nodes(); ++n) {
    cpu_free_.push_back(shape_.node(n).cpu_milli);
    mem_free_.push_back(shape_.node(n).memory_mib);
  }
  held_.assign(static_cast<std::size_t>(shape_.gpus()), 0);
  node_holds_.assign(static_cast<std::size_t>(shape_.nodes()), 0);
}

void Packer::hold(const std::vector<int>& gpus) {
  std::vector<char> next(held_.size(), 0);
  for (int g : gpus) next[static_cast<std::size_t>(g)] = 1;
  for (int g = 0; g < shape_.gpus(); ++g) {
    auto i = static_cast<std::size_t>(g);
    if (next[i] == held_[i]) continue;
    held_[i] = next[i];
    node_holds_[static_cast<std::size_t>(shape_.node_of(g))] += next[i] ? 1 : -1;
    holds_changed(shape_.node_of(g));
  }
}

bool Packer::host_fits(int node, const MappedTask& task) const {
  if (!shape_.host_constrained()) return true;
  auto n = static_cast<std::size_t>(node);
  return cpu_free_[n] >= task.cpu_milli && mem_free_[n] >= task.memory_mib;
}

void Packer::take_host(int node, const MappedTask& task, Allocation& into) {
  into.node = node;
  if (!shape_.host_constrained()) return;
  auto n = static_cast<std::size_t>(node);
  cpu_free_[n] -= task.cpu_milli;
  mem_free_[n] -= task.memory_mib;
  into.cpu_milli = task.cpu_milli;
  into.memory_mib = task.memory_mib;
}

void Packer::return_host(const Allocation& allocation) {
  if (allocation.node < 0 || !shape_.host_constrained()) return;
  auto n = static_cast<std::size_t>(allocation.node);
  cpu_free_[n] += allocation.cpu_milli;
  mem_free_[n] += allocation.memory_mib;
}

std::optional<Allocation> Packer::allocate_host_only(const MappedTask& task) {
  int node = slurm_node_choice(
      shape_.nodes(), task.cpu_milli, [&](int n) { return host_fits(n, task); },
      [&](int n) { return free_cpu_milli(n); });
  if (node < 0) return std::nullopt;
  Allocation a;
  take_host(node, task, a);
  return a;
}

}  // namespace vgpu::bench
