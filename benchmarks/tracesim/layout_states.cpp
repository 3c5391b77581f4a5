#include "layout_states.h"

#include <stdexcept>
#include <string>

namespace vgpu::bench {

LayoutStates::LayoutStates(const GpuModel& model) : model_(&model) {
  // Key: 4 bits (profile index + 1) per memory-slice start; instances never share a start.
  if (model.memory_slices > 16 || model.profiles.size() > 15)
    throw std::logic_error("LayoutStates: model " + model.name + " too large for the state key");
  intern(GpuLayout(model));
}

int LayoutStates::profile_index(const Profile& p) const {
  for (std::size_t i = 0; i < model_->profiles.size(); ++i)
    if (model_->profiles[i].name == p.name) return static_cast<int>(i);
  throw std::logic_error("profile " + p.name + " is not on " + model_->name);
}

std::uint64_t LayoutStates::key(const GpuLayout& layout) const {
  std::uint64_t k = 0;
  for (const auto& inst : layout.instances()) {
    // GpuLayout stores the model's own Profile objects, so the offset is the profile's index.
    auto pi = static_cast<std::uint64_t>(inst.profile - model_->profiles.data() + 1);
    k |= pi << (4 * inst.placement.start);
  }
  return k;
}

StateId LayoutStates::intern(const GpuLayout& layout) {
  auto k = key(layout);
  if (auto it = ids_.find(k); it != ids_.end()) return it->second;
  StateId id = static_cast<StateId>(states_.size());
  State s{layout, layout.options_score(), {}, {}};
  s.best.resize(model_->profiles.size());
  s.first.resize(model_->profiles.size());
  states_.push_back(std::move(s));
  ids_.emplace(k, id);
  return id;
}

PlacementChoice LayoutStates::choose(StateId s, int profile_index, std::optional<Placement> where) {
  PlacementChoice c;
  if (!where) return c;
  const Profile& p = model_->profiles[static_cast<std::size_t>(profile_index)];
  GpuLayout trial = states_[idx(s)].layout;
  if (auto r = trial.place(p, *where); !r)
    throw std::logic_error("GpuLayout offered a placement it then refused: " + r.error().message);
  c.ok = true;
  c.where = *where;
  c.loss = states_[idx(s)].options - trial.options_score();
  c.next = intern(trial);  // may grow states_: no references into it are held here
  return c;
}

const PlacementChoice& LayoutStates::best(StateId s, int profile_index) {
  auto pi = static_cast<std::size_t>(profile_index);
  if (!states_[idx(s)].best[pi]) {
    const Profile& p = model_->profiles[pi];
    auto where = states_[idx(s)].layout.best_placement(p);
    PlacementChoice c = choose(s, profile_index, where);
    states_[idx(s)].best[pi] = c;
  }
  return *states_[idx(s)].best[pi];
}

const PlacementChoice& LayoutStates::first_fit(StateId s, int profile_index) {
  auto pi = static_cast<std::size_t>(profile_index);
  if (!states_[idx(s)].first[pi]) {
    const Profile& p = model_->profiles[pi];
    auto where = states_[idx(s)].layout.first_fit_placement(p);
    PlacementChoice c = choose(s, profile_index, where);
    states_[idx(s)].first[pi] = c;
  }
  return *states_[idx(s)].first[pi];
}

StateId LayoutStates::release(StateId s, Placement where) {
  GpuLayout after = states_[idx(s)].layout;
  if (auto r = after.release(where); !r)
    throw std::logic_error("release of an instance the simulator never placed: " + r.error().message);
  return intern(after);
}

}  // namespace vgpu::bench
