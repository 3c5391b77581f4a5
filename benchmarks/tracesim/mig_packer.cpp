#include "mig_packer.h"

#include "cluster_placement.h"

namespace vgpu::bench {

MigPacker::MigPacker(const GpuModel& model, ClusterShape shape, Mode mode)
    : Packer(model, shape),
      mode_(mode),
      states_(model),
      full_index_(states_.profile_index(full_gpu_profile(model))),
      gpu_state_(static_cast<std::size_t>(shape.gpus), LayoutStates::empty()),
      node_free_slices_(static_cast<std::size_t>(shape.nodes())),
      node_empty_gpus_(static_cast<std::size_t>(shape.nodes())),
      state_population_(1, shape.gpus) {
  for (int n = 0; n < shape.nodes(); ++n) {
    int gpus = shape.end_gpu(n) - shape.first_gpu(n);
    node_free_slices_[static_cast<std::size_t>(n)] = gpus * model.compute_slices;
    node_empty_gpus_[static_cast<std::size_t>(n)] = gpus;
  }
}

std::string_view MigPacker::name() const {
  switch (mode_) {
    case Mode::planner: return "planner";
    case Mode::firstfit: return "firstfit";
    case Mode::whole: return "whole";
  }
  return "?";
}

const PlacementChoice& MigPacker::choice(StateId s, int profile_index) {
  return mode_ == Mode::firstfit ? states_.first_fit(s, profile_index)
                                 : states_.best(s, profile_index);
}

bool MigPacker::fits_somewhere(int profile_index) {
  // Cheap refusal: a few hundred distinct layouts instead of thousands of GPUs.
  for (std::size_t s = 0; s < state_population_.size(); ++s)
    if (state_population_[s] > 0 && choice(static_cast<StateId>(s), profile_index).ok) return true;
  return false;
}

void MigPacker::set_state(int gpu, StateId next) {
  auto g = static_cast<std::size_t>(gpu);
  auto node = static_cast<std::size_t>(shape_.node_of(gpu));
  StateId prev = gpu_state_[g];
  int delta = states_.used_compute(next) - states_.used_compute(prev);
  node_free_slices_[node] -= delta;
  allocated_slices_ += delta;
  if (prev == LayoutStates::empty()) --node_empty_gpus_[node];
  if (next == LayoutStates::empty()) ++node_empty_gpus_[node];
  if (state_population_.size() < states_.size()) state_population_.resize(states_.size(), 0);
  --state_population_[static_cast<std::size_t>(prev)];
  ++state_population_[static_cast<std::size_t>(next)];
  gpu_state_[g] = next;
}

std::optional<Allocation> MigPacker::allocate(const MappedTask& task) {
  if (task.kind != TaskKind::sharing && task.kind != TaskKind::whole_gpu) return std::nullopt;
  if (task.gpus > 1) return allocate_node(task.gpus);
  int pi = mode_ == Mode::whole ? full_index_ : states_.profile_index(*task.profile);
  return allocate_one(pi);
}

std::optional<Allocation> MigPacker::allocate_one(int profile_index) {
  if (!fits_somewhere(profile_index)) return std::nullopt;
  int chosen = -1;
  GpuCandidate best;
  for (int g = 0; g < shape_.gpus; ++g) {
    const PlacementChoice& c = choice(gpu_state_[static_cast<std::size_t>(g)], profile_index);
    if (!c.ok) continue;
    if (mode_ == Mode::firstfit) {
      chosen = g;
      break;
    }
    GpuCandidate cand{g, c.loss,
                      node_free_slices_[static_cast<std::size_t>(shape_.node_of(g))]};
    if (chosen < 0 || better_candidate(cand, best)) {
      chosen = g;
      best = cand;
    }
  }
  if (chosen < 0) return std::nullopt;  // unreachable after fits_somewhere(); kept for safety
  PlacementChoice c = choice(gpu_state_[static_cast<std::size_t>(chosen)], profile_index);
  set_state(chosen, c.next);
  const Profile* p = &model_->profiles[static_cast<std::size_t>(profile_index)];
  return Allocation{{AllocationPart{chosen, p, c.where}}};
}

std::optional<Allocation> MigPacker::allocate_node(int gpus) {
  auto empty_of = [&](int n) { return node_empty_gpus_[static_cast<std::size_t>(n)]; };
  int node = -1;
  if (mode_ == Mode::firstfit) {
    for (int n = 0; n < shape_.nodes() && node < 0; ++n)
      if (empty_of(n) >= gpus) node = n;
  } else {
    node = best_fit_node(shape_.nodes(), gpus, empty_of);
  }
  if (node < 0) return std::nullopt;
  Allocation a;
  const Profile* full = &model_->profiles[static_cast<std::size_t>(full_index_)];
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node) && std::ssize(a.parts) < gpus;
       ++g) {
    if (gpu_state_[static_cast<std::size_t>(g)] != LayoutStates::empty()) continue;
    PlacementChoice c = choice(LayoutStates::empty(), full_index_);
    set_state(g, c.next);
    a.parts.push_back({g, full, c.where});
  }
  return a;
}

void MigPacker::release(const Allocation& allocation) {
  for (const auto& part : allocation.parts)
    set_state(part.gpu, states_.release(gpu_state_[static_cast<std::size_t>(part.gpu)],
                                        part.where));
}

std::vector<GpuLayout> MigPacker::running_layouts() const {
  std::vector<GpuLayout> out;
  out.reserve(gpu_state_.size());
  for (StateId s : gpu_state_) out.push_back(states_.layout(s));
  return out;
}

}  // namespace vgpu::bench
