#include "static_packer.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "cluster_placement.h"
#include "slurm_node_choice.h"

namespace vgpu::bench {

StaticPacker::StaticPacker(const GpuModel& model, ClusterShape shape, const StaticPlan& plan, NodeChoice node_choice)
    : Packer(model, std::move(shape)), plan_(plan), node_choice_(node_choice) {
  std::size_t np = model.profiles.size();
  node_free_.assign(static_cast<std::size_t>(shape_.nodes()) * np, 0);
  total_free_.assign(np, 0);
  int gpu = 0;
  for (std::size_t r = 0; r < plan.recipes.size(); ++r) {
    for (int k = 0; k < plan.gpus[r] && gpu < shape_.gpus(); ++k, ++gpu) {
      gpu_first_slot_.push_back(slots_.size());
      for (const auto& inst : plan.recipes[r].instances) {
        slots_.push_back({gpu, inst.profile, inst.placement, false});
        ++node_free(shape_.node_of(gpu), pidx(inst.profile));
        ++total_free_[pidx(inst.profile)];
      }
    }
  }
  if (gpu != shape_.gpus()) throw std::logic_error("static plan does not cover every GPU");
  gpu_first_slot_.push_back(slots_.size());
  by_size_.resize(np);
  std::iota(by_size_.begin(), by_size_.end(), 0);
  std::ranges::stable_sort(by_size_, [&](std::size_t a, std::size_t b) {
    const auto &pa = model.profiles[a], &pb = model.profiles[b];
    return std::tie(pa.compute_slices, pa.memory_slices) < std::tie(pb.compute_slices, pb.memory_slices);
  });
}

void StaticPacker::mark(Slot& slot, bool busy) {
  int d = busy ? -1 : 1;
  node_free(shape_.node_of(slot.gpu), pidx(slot.profile)) += d;
  total_free_[pidx(slot.profile)] += d;
  allocated_slices_ -= d * slot.profile->compute_slices;
  slot.busy = busy;
}

int StaticPacker::free_unheld(int node, std::size_t profile) {
  int free = node_free(node, profile);
  if (!node_has_holds(node)) return free;
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g)
    for (std::size_t i = gpu_first_slot_[static_cast<std::size_t>(g)];
         held(g) && i < gpu_first_slot_[static_cast<std::size_t>(g) + 1]; ++i)
      if (!slots_[i].busy && pidx(slots_[i].profile) == profile) --free;
  return free;
}

StaticPacker::Slot* StaticPacker::take(int node, std::size_t profile) {
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g)
    for (std::size_t i = gpu_first_slot_[static_cast<std::size_t>(g)];
         !held(g) && i < gpu_first_slot_[static_cast<std::size_t>(g) + 1]; ++i)
      if (!slots_[i].busy && pidx(slots_[i].profile) == profile) {
        mark(slots_[i], true);
        return &slots_[i];
      }
  return nullptr;
}

std::optional<Allocation> StaticPacker::allocate(const MappedTask& task) {
  if (task.kind == TaskKind::cpu_only) return allocate_host_only(task);
  if (task.kind != TaskKind::sharing && task.kind != TaskKind::whole_gpu) return std::nullopt;
  const Profile& want = *task.profile;
  for (std::size_t q : by_size_) {
    const Profile& have = model_->profiles[q];
    if (have.compute_slices < want.compute_slices || have.memory_slices < want.memory_slices) continue;
    if (task.gpus > 1 && have.compute_slices != model_->compute_slices) continue;
    if (total_free_[q] < task.gpus) continue;
    auto usable = [&](int n) { return free_unheld(n, q) >= task.gpus && host_fits(n, task); };
    int node = node_choice_ == NodeChoice::slurm
                   ? slurm_node_choice(shape_.nodes(), task.cpu_milli, usable, [&](int n) { return free_cpu_milli(n); })
                   : best_fit_node(shape_.nodes(), task.gpus, [&](int n) { return usable(n) ? free_unheld(n, q) : 0; });
    if (node < 0) continue;
    Allocation a;
    take_host(node, task, a);
    for (int k = 0; k < task.gpus; ++k) {
      Slot* s = take(node, q);
      a.parts.push_back({s->gpu, s->profile, s->where, 0});
    }
    return a;
  }
  return std::nullopt;
}

void StaticPacker::release(const Allocation& allocation) {
  return_host(allocation);
  for (const auto& part : allocation.parts) {
    auto g = static_cast<std::size_t>(part.gpu);
    for (std::size_t i = gpu_first_slot_[g]; i < gpu_first_slot_[g + 1]; ++i)
      if (slots_[i].busy && slots_[i].where == part.where) mark(slots_[i], false);
  }
}

int StaticPacker::gpu_used_slices(int gpu) const {
  int used = 0;
  for (std::size_t i = gpu_first_slot_[static_cast<std::size_t>(gpu)];
       i < gpu_first_slot_[static_cast<std::size_t>(gpu) + 1]; ++i)
    if (slots_[i].busy) used += slots_[i].profile->compute_slices;
  return used;
}

std::vector<GpuLayout> StaticPacker::running_layouts() const {
  std::vector<GpuLayout> out(static_cast<std::size_t>(shape_.gpus()), GpuLayout(*model_));
  for (const auto& s : slots_)
    if (s.busy) (void)out[static_cast<std::size_t>(s.gpu)].place(*s.profile, s.where);
  return out;
}

}  // namespace vgpu::bench
