#include "mig_packer.h"

#include <algorithm>
#include <stdexcept>
#include <cmath>

#include "cluster_placement.h"
#include "slurm_node_choice.h"

namespace vgpu::bench {

MigPacker::MigPacker(const GpuModel& model, ClusterShape shape, Mode mode, NodeChoice node_choice, int share_min_slices,
                     NodeWeighting node_weights, bool node_preferences, bool mig_on_demand)
    : Packer(model, std::move(shape)),
      mode_(mode),
      node_choice_(node_choice),
      node_weights_(node_weights),
      node_preferences_(node_preferences),
      share_min_slices_(share_min_slices),
      states_(model),
      full_index_(states_.profile_index(full_gpu_profile(model))),
      gpu_state_(static_cast<std::size_t>(shape_.gpus()), LayoutStates::empty()),
      node_free_slices_(static_cast<std::size_t>(shape_.nodes())),
      node_empty_gpus_(static_cast<std::size_t>(shape_.nodes())),
      state_population_(1, shape_.gpus()),
      shared_(static_cast<std::size_t>(shape_.gpus())),
      node_share_room_(static_cast<std::size_t>(shape_.nodes()), 0),
      mig_on_demand_(mig_on_demand),
      modes_(shape_.gpus()) {
  // Its names cover the two variants measured; other combinations would report under a wrong one.
  if (mig_on_demand &&
      (node_weights != NodeWeighting::none || node_preferences || (mode != Mode::planner && mode != Mode::shared)))
    throw std::invalid_argument("MIG on demand is modelled for the plain planner and shared modes only");
  for (int n = 0; n < shape_.nodes(); ++n) {
    int gpus = shape_.end_gpu(n) - shape_.first_gpu(n);
    node_free_slices_[static_cast<std::size_t>(n)] = gpus * model.compute_slices;
    node_empty_gpus_[static_cast<std::size_t>(n)] = gpus;
  }
}

MigPacker::MigPacker(const GpuModel& model, ClusterShape shape, PublishedScheduler scheduler,
                     std::vector<TaskShape> typical, Mode mode)
    : MigPacker(model, std::move(shape), mode, NodeChoice::best, model.compute_slices) {
  if (mode != Mode::shared && mode != Mode::planner)
    throw std::invalid_argument("a published scheduler chooses for shared or dedicated instances only");
  published_ = scheduler;
  fragmentation_ = Fragmentation(std::move(typical));
  for (int n = 0; n < shape_.nodes(); ++n)
    if (shape_.end_gpu(n) - shape_.first_gpu(n) > NodeFree::kMaxGpus)
      throw std::invalid_argument("a node of more than 8 GPUs: the published scores model 8");
}

std::string_view MigPacker::name() const {
  if (published_ == PublishedScheduler::fgd) return mode_ == Mode::planner ? "fgd-mig" : "fgd-twin";
  if (published_ == PublishedScheduler::bestfit) return "bestfit-twin";
  if (mig_on_demand_) return mode_ == Mode::planner ? "planner+ondemand" : "shared+ondemand";
  switch (mode_) {
    case Mode::planner:
      if (node_preferences_)
        return node_weights_ == NodeWeighting::by_free_capacity ? "planner+prefer+fill" : "planner+prefer";
      if (node_weights_ == NodeWeighting::by_free_capacity) return "planner+fill";
      return node_weights_ == NodeWeighting::by_use ? "planner+weights" : "planner";
    case Mode::firstfit: return "firstfit";
    case Mode::whole: return "whole";
    case Mode::shared:
      if (node_preferences_)
        return node_weights_ == NodeWeighting::by_free_capacity ? "shared+prefer+fill" : "shared+prefer";
      if (node_weights_ == NodeWeighting::by_free_capacity) return "shared+fill";
      return node_weights_ == NodeWeighting::by_use ? "shared+weights" : "shared";
  }
  return "?";
}

const PlacementChoice& MigPacker::choice(StateId s, int profile_index) {
  return mode_ == Mode::firstfit ? states_.first_fit(s, profile_index) : states_.best(s, profile_index);
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

int MigPacker::gpu_in_node(int node, int profile_index) {
  int chosen = -1;
  long best_loss = 0;
  bool best_switches = false;
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g) {
    if (held(g)) continue;
    const PlacementChoice& c = choice(gpu_state_[static_cast<std::size_t>(g)], profile_index);
    if (!c.ok) continue;
    if (mode_ == Mode::firstfit) return g;
    // plan_node: least loss, then (MIG on demand) no mode switch, then the lowest GPU.
    const bool switches = modes_.mode(g) != GpuMode::partitioned;
    if (chosen < 0 || c.loss < best_loss || (c.loss == best_loss && best_switches && !switches)) {
      chosen = g;
      best_loss = c.loss;
      best_switches = switches;
    }
  }
  return chosen;
}

int MigPacker::choose_node(const MappedTask& task, auto&& usable) {
  // The weights planner.node_weights gives: by use, in_use 1 and idle 2 (only their order matters);
  // by free capacity, the node's free thousandths of a GPU (base and scale change no order).
  auto weight = [&](int n) -> long long {
    switch (node_weights_) {
      case NodeWeighting::none: return 1;
      case NodeWeighting::by_use: {
        const int gpus = shape_.end_gpu(n) - shape_.first_gpu(n);
        return node_empty_gpus_[static_cast<std::size_t>(n)] == gpus ? 2 : 1;
      }
      case NodeWeighting::by_free_capacity: {
        long long free = 0;
        for (int g = shape_.first_gpu(n); g < shape_.end_gpu(n); ++g) free += free_milli(g);
        return free;
      }
    }
    return 1;
  };
  auto free_cpu = [&](int n) { return free_cpu_milli(n); };
  if (node_preferences_) {
    auto empty = [&](int n) { return node_empty_gpus_[static_cast<std::size_t>(n)]; };
    auto partly_used_gpu = [&](int n) {
      for (int g = shape_.first_gpu(n); g < shape_.end_gpu(n); ++g)
        if (int used = gpu_used_slices(g); used > 0 && used < model_->compute_slices) return true;
      return false;
    };
    // The submit filter's rule (is_part_of_a_gpu): a share, or a profile smaller than the GPU.
    const bool part_of_a_gpu =
        task.kind == TaskKind::sharing && task.gpus == 1 &&
        (mode_ == Mode::shared || (task.profile && task.profile->compute_slices < model_->compute_slices));
    auto preferred = [&](int n) {
      if (task.kind == TaskKind::cpu_only) return empty(n) == 0;  // feature "no idle GPU"
      if (part_of_a_gpu) return partly_used_gpu(n);               // feature "partly used GPU"
      return empty(n) < shape_.end_gpu(n) - shape_.first_gpu(n);  // feature "in use"
    };
    int node = slurm_node_choice(
        shape_.nodes(), task.cpu_milli, [&](int n) { return preferred(n) && usable(n); }, free_cpu, weight);
    if (node >= 0) return node;
  }
  return slurm_node_choice(shape_.nodes(), task.cpu_milli, usable, free_cpu, weight);
}

std::optional<Allocation> MigPacker::allocate(const MappedTask& task) {
  switch (task.kind) {
    case TaskKind::cpu_only:
      if (published_ != PublishedScheduler::none) return allocate_published(task);
      if (node_choice_ == NodeChoice::slurm) {
        // A node's weight is the node's, not the job's: with node weights steered, Slurm tries a
        // CPU-only job on the lighter nodes (those with vgpu in use) first as well.
        int node = choose_node(task, [&](int n) { return host_fits(n, task); });
        if (node < 0) return std::nullopt;
        Allocation a;
        take_host(node, task, a);
        return a;
      }
      return allocate_host_only(task);
    case TaskKind::too_wide: return std::nullopt;
    case TaskKind::sharing:
    case TaskKind::whole_gpu: break;
  }
  if (published_ != PublishedScheduler::none) return allocate_published(task);
  if (task.gpus > 1) return allocate_node(task);
  if (mode_ == Mode::shared && task.kind == TaskKind::sharing) return allocate_share(task);
  int pi = mode_ == Mode::whole ? full_index_ : states_.profile_index(*task.profile);
  return allocate_one(task, pi);
}

std::optional<Allocation> MigPacker::allocate_one(const MappedTask& task, int profile_index) {
  if (!fits_somewhere(profile_index)) return std::nullopt;
  int chosen = -1;
  if (node_choice_ == NodeChoice::slurm) {
    int node = choose_node(task, [&](int n) { return host_fits(n, task) && gpu_in_node(n, profile_index) >= 0; });
    if (node >= 0) chosen = gpu_in_node(node, profile_index);
  } else {
    GpuCandidate best;
    for (int g = 0; g < shape_.gpus(); ++g) {
      if (held(g)) continue;
      const PlacementChoice& c = choice(gpu_state_[static_cast<std::size_t>(g)], profile_index);
      if (!c.ok || !host_fits(shape_.node_of(g), task)) continue;
      if (mode_ == Mode::firstfit) {
        chosen = g;
        break;
      }
      GpuCandidate cand{g, c.loss, node_free_slices_[static_cast<std::size_t>(shape_.node_of(g))]};
      if (chosen < 0 || better_candidate(cand, best)) {
        chosen = g;
        best = cand;
      }
    }
  }
  if (chosen < 0) return std::nullopt;
  PlacementChoice c = choice(gpu_state_[static_cast<std::size_t>(chosen)], profile_index);
  const bool switched = enter_mode(chosen, GpuMode::partitioned);
  set_state(chosen, c.next);
  const Profile* p = &model_->profiles[static_cast<std::size_t>(profile_index)];
  Allocation a;
  take_host(shape_.node_of(chosen), task, a);
  a.parts.push_back(AllocationPart{chosen, p, c.where, 0, false, switched});
  return a;
}

std::optional<Allocation> MigPacker::allocate_node(const MappedTask& task) {
  auto usable = [&](int n) { return empty_unheld_gpus(n) >= task.gpus && host_fits(n, task); };
  int node = -1;
  if (node_choice_ == NodeChoice::slurm) {
    node = choose_node(task, usable);
  } else if (mode_ == Mode::firstfit) {
    for (int n = 0; n < shape_.nodes() && node < 0; ++n)
      if (usable(n)) node = n;
  } else {
    node = best_fit_node(shape_.nodes(), task.gpus, [&](int n) { return usable(n) ? empty_unheld_gpus(n) : 0; });
  }
  if (node < 0) return std::nullopt;
  return take_empty_gpus(node, task);
}

std::pair<int, int> MigPacker::shared_slot_in_node(int node, int milli) {
  // The node's open instances side by side, so the core rule sees them all at once.
  std::vector<SharedInstance> open;
  std::vector<std::pair<int, int>> where;
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g) {
    if (held(g)) continue;
    const auto& list = shared_[static_cast<std::size_t>(g)];
    for (std::size_t i = 0; i < list.size(); ++i) {
      open.push_back(list[i].instance);
      where.emplace_back(g, static_cast<int>(i));
    }
  }
  int pick = choose_shared_instance(*model_, open, milli);
  return pick < 0 ? std::pair{-1, -1} : where[static_cast<std::size_t>(pick)];
}

void MigPacker::refresh_share_room(int node) {
  int room = 0;
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g)
    for (const auto& s : shared_[static_cast<std::size_t>(g)])
      if (!held(g)) room = std::max(room, share_capacity_milli(*model_, *s.instance.profile) - s.instance.used_milli);
  node_share_room_[static_cast<std::size_t>(node)] = room;
}

std::optional<Allocation> MigPacker::allocate_share(const MappedTask& task) {
  int milli = static_cast<int>(task.requested_milli);
  // An open instance with room first, on the node Slurm picks among those that have one: the
  // node only offers new share capacity once its open instances are full (docs/benchmarks.md).
  auto has_room = [&](int n) { return node_share_room_[static_cast<std::size_t>(n)] >= milli && host_fits(n, task); };
  int node = -1;
  if (node_choice_ == NodeChoice::slurm) {
    node = choose_node(task, has_room);
  } else {
    for (int n = 0; n < shape_.nodes() && node < 0; ++n)
      if (has_room(n)) node = n;
  }
  if (node >= 0) {
    auto [gpu, index] = shared_slot_in_node(node, milli);
    OpenShared& s = shared_[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(index)];
    s.instance.used_milli += milli;
    refresh_share_room(node);
    Allocation a;
    take_host(node, task, a);
    a.parts.push_back({gpu, s.instance.profile, s.where, milli});
    return a;
  }
  const Profile* p = profile_for_shared_instance(*model_, milli, share_min_slices_);
  if (!p) return std::nullopt;
  MappedTask as_instance = task;
  as_instance.profile = p;
  auto a = allocate_one(as_instance, states_.profile_index(*p));
  if (!a) return std::nullopt;
  AllocationPart& part = a->parts.front();
  shared_[static_cast<std::size_t>(part.gpu)].push_back({part.where, {p, milli}});
  part.share_milli = milli;
  refresh_share_room(a->node);
  return a;
}

int MigPacker::free_milli(int gpu) const {
  auto g = static_cast<std::size_t>(gpu);
  if (held(gpu)) return 0;
  int free_slices = model_->compute_slices - states_.used_compute(gpu_state_[g]);
  int room = 1000 * free_slices / model_->compute_slices;
  for (const auto& s : shared_[g]) room += share_capacity_milli(*model_, *s.instance.profile) - s.instance.used_milli;
  return room;
}

NodeFree MigPacker::node_free(int node) const {
  NodeFree f;
  f.cpu_milli = free_cpu_milli(node);
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g)
    f.gpu_milli[static_cast<std::size_t>(f.gpus++)] = static_cast<std::int16_t>(free_milli(g));
  return f;
}

Allocation MigPacker::share_on(int gpu, const MappedTask& task, int milli) {
  const int node = shape_.node_of(gpu);
  auto& list = shared_[static_cast<std::size_t>(gpu)];
  std::vector<SharedInstance> open;
  for (const auto& s : list) open.push_back(s.instance);
  Allocation a;
  take_host(node, task, a);
  if (int pick = choose_shared_instance(*model_, open, milli); pick >= 0) {
    OpenShared& s = list[static_cast<std::size_t>(pick)];
    s.instance.used_milli += milli;
    a.parts.push_back({gpu, s.instance.profile, s.where, milli});
  } else {
    const Profile* p = profile_for_shared_instance(*model_, milli, share_min_slices_);
    PlacementChoice c = choice(gpu_state_[static_cast<std::size_t>(gpu)], states_.profile_index(*p));
    enter_mode(gpu, GpuMode::partitioned);
    set_state(gpu, c.next);
    list.push_back({c.where, {p, milli}});
    a.parts.push_back({gpu, p, c.where, milli});
  }
  refresh_share_room(node);
  return a;
}

double MigPacker::published_score(double frag_before, NodeFree after, const MappedTask& task) {
  if (shape_.host_constrained()) after.cpu_milli -= task.cpu_milli;
  if (published_ != PublishedScheduler::fgd) return best_fit_score(after);
  // FGD scores a node 0-100 as the integer part of 100 * sigmoid(-change / 1000); taken as they
  // do, with the lowest node and GPU on ties (its simulator's own tie-break is the Kubernetes
  // scheduler's random pick, which measured worse here: docs/benchmarks.md).
  const double change = fragmentation_.of(after) - frag_before;
  return -std::floor(100.0 / (1.0 + std::exp(change / 1000.0)));
}

std::optional<Allocation> MigPacker::allocate_published_instance(const MappedTask& task) {
  const int pi = states_.profile_index(*task.profile);
  const int milli = profile_milli(*task.profile, *model_);
  int best_gpu = -1;
  double best = 0;
  for (int n = 0; n < shape_.nodes(); ++n) {
    if (!host_fits(n, task)) continue;
    const NodeFree before = node_free(n);
    const double frag_before = published_ == PublishedScheduler::fgd ? fragmentation_.of(before) : 0;
    for (int i = 0; i < before.gpus; ++i) {
      const int gpu = shape_.first_gpu(n) + i;
      if (held(gpu) || !choice(gpu_state_[static_cast<std::size_t>(gpu)], pi).ok) continue;
      NodeFree after = before;
      auto& free = after.gpu_milli[static_cast<std::size_t>(i)];
      free = static_cast<std::int16_t>(std::max(0, free - milli));
      const double score = published_score(frag_before, after, task);
      if (best_gpu < 0 || score < best) {  // ties: the lowest node and GPU
        best = score;
        best_gpu = gpu;
      }
    }
  }
  if (best_gpu < 0) return std::nullopt;
  const PlacementChoice c = choice(gpu_state_[static_cast<std::size_t>(best_gpu)], pi);
  enter_mode(best_gpu, GpuMode::partitioned);
  set_state(best_gpu, c.next);
  Allocation a;
  take_host(shape_.node_of(best_gpu), task, a);
  a.parts.push_back(AllocationPart{best_gpu, task.profile, c.where, 0});
  return a;
}

std::optional<Allocation> MigPacker::allocate_published(const MappedTask& task) {
  const int gpus = task.kind == TaskKind::cpu_only ? 0 : task.gpus;
  if (mode_ == Mode::planner && gpus == 1) return allocate_published_instance(task);
  const bool sharing = task.kind == TaskKind::sharing;
  const int milli = sharing ? static_cast<int>(task.requested_milli) : 1000;
  int best_node = -1, best_gpu = -1;
  double best = 0;
  for (int n = 0; n < shape_.nodes(); ++n) {
    if (!host_fits(n, task)) continue;
    const NodeFree before = node_free(n);
    const double frag_before = published_ == PublishedScheduler::fgd ? fragmentation_.of(before) : 0;
    auto consider = [&](int gpu, const NodeFree& after) {
      const double score = published_score(frag_before, after, task);
      if (best_node < 0 || score < best) {  // ties: the lowest node and GPU
        best = score;
        best_node = n;
        best_gpu = gpu;
      }
    };
    const int first = shape_.first_gpu(n);
    if (gpus == 0) {
      consider(-1, before);
    } else if (sharing) {
      for (int i = 0; i < before.gpus; ++i) {
        int free = before.gpu_milli[static_cast<std::size_t>(i)];
        if (free < milli) continue;
        NodeFree after = before;
        after.gpu_milli[static_cast<std::size_t>(i)] = static_cast<std::int16_t>(free - milli);
        consider(first + i, after);
      }
    } else {
      NodeFree after = before;
      int taken = 0;
      for (int i = 0; i < before.gpus && taken < gpus; ++i)
        if (before.gpu_milli[static_cast<std::size_t>(i)] == 1000) {
          after.gpu_milli[static_cast<std::size_t>(i)] = 0;
          ++taken;
        }
      if (taken == gpus) consider(-1, after);
    }
  }
  if (best_node < 0) return std::nullopt;
  if (gpus == 0) {
    Allocation a;
    take_host(best_node, task, a);
    return a;
  }
  if (sharing) return share_on(best_gpu, task, milli);
  return take_empty_gpus(best_node, task);
}

void MigPacker::release(const Allocation& allocation) {
  return_host(allocation);
  for (const auto& part : allocation.parts) {
    auto g = static_cast<std::size_t>(part.gpu);
    if (part.share_milli > 0) {
      auto& list = shared_[g];
      auto it = std::ranges::find_if(list, [&](const OpenShared& s) { return s.where == part.where; });
      if (it == list.end()) continue;  // not ours: CheckingPacker's tests catch that
      it->instance.used_milli -= part.share_milli;
      if (it->instance.used_milli <= 0) {  // the last share ended: the instance goes
        list.erase(it);
        set_state(part.gpu, states_.release(gpu_state_[g], part.where));
      }
      refresh_share_room(shape_.node_of(part.gpu));
      continue;
    }
    set_state(part.gpu, states_.release(gpu_state_[g], part.where));
  }
}

int MigPacker::empty_unheld_gpus(int node) const {
  int empty = node_empty_gpus_[static_cast<std::size_t>(node)];
  if (!node_has_holds(node)) return empty;
  for (int g = shape_.first_gpu(node); g < shape_.end_gpu(node); ++g)
    if (held(g) && gpu_state_[static_cast<std::size_t>(g)] == LayoutStates::empty()) --empty;
  return empty;
}

int MigPacker::gpu_used_slices(int gpu) const {
  return states_.used_compute(gpu_state_[static_cast<std::size_t>(gpu)]);
}

std::vector<GpuLayout> MigPacker::running_layouts() const {
  std::vector<GpuLayout> out;
  out.reserve(gpu_state_.size());
  for (StateId s : gpu_state_) out.push_back(states_.layout(s));
  return out;
}

}  // namespace vgpu::bench
