#include "vgpu/core/gpu_layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpu {

std::string_view to_string(GpuMode mode) { return mode == GpuMode::whole ? "whole" : "partitioned"; }

int GpuLayout::count_of(const Profile& profile) const {
  return static_cast<int>(std::ranges::count(instances_, &profile, &PlacedInstance::profile));
}

std::optional<std::string> GpuLayout::why_not(const Profile& profile, Placement placement) const {
  if (std::ranges::find(model_->profiles, profile.name, &Profile::name) == model_->profiles.end())
    return fmt::format("profile {} does not exist on {}", profile.name, model_->name);
  if (std::ranges::find(profile.placements, placement) == profile.placements.end())
    return fmt::format("{{{},{}}} is not a legal placement of {} on {}", placement.start, placement.size, profile.name,
                       model_->name);
  // The driver creates MIG instances only with MIG mode on (nvmlDeviceCreateGpuInstance* answer
  // NOT_SUPPORTED otherwise), and a GPU with MIG on is no longer one CUDA device.
  if (profile.whole_gpu && mode_ != GpuMode::whole)
    return fmt::format("{} is the whole GPU: needs MIG mode off, and this {} has it on", profile.name, model_->name);
  if (!profile.whole_gpu && mode_ == GpuMode::whole)
    return fmt::format("{} needs MIG mode on, and this {} has it off", profile.name, model_->name);
  if (used_mask_ & placement.mask())
    return fmt::format("memory slices {}-{} overlap an existing instance", placement.start, placement.end() - 1);
  if (used_compute_ + profile.compute_slices > model_->compute_slices)
    return fmt::format("needs {} compute slices, {} free", profile.compute_slices, free_compute_slices());
  if (model_->partitioning == Partitioning::uniform && !instances_.empty() &&
      instances_.front().profile->nvml_profile_id != profile.nvml_profile_id)
    return fmt::format("the GPU is partitioned as {}: every partition of {} has one profile",
                       instances_.front().profile->name, model_->name);
  if (count_of(profile) >= profile.max_instances)
    return fmt::format("{} already has its maximum of {} instance(s)", profile.name, profile.max_instances);
  return std::nullopt;
}

Result<void> GpuLayout::place(const Profile& profile, Placement placement) {
  if (auto why = why_not(profile, placement)) return fail(ErrorCode::conflict, *why);
  // Store the model's own Profile object so pointer equality identifies profiles everywhere.
  const Profile* own = model_->find_profile(profile.name);
  instances_.push_back({own, placement});
  used_mask_ |= placement.mask();
  used_compute_ += profile.compute_slices;
  return {};
}

Result<void> GpuLayout::release(Placement placement) {
  auto it = std::ranges::find(instances_, placement, &PlacedInstance::placement);
  if (it == instances_.end())
    return fail(ErrorCode::not_found, fmt::format("no instance at {{{},{}}}", placement.start, placement.size));
  used_mask_ &= ~placement.mask();
  used_compute_ -= it->profile->compute_slices;
  instances_.erase(it);
  return {};
}

std::vector<Placement> GpuLayout::free_placements(const Profile& profile) const {
  std::vector<Placement> out;
  for (const auto& p : profile.placements)
    if (can_place(profile, p)) out.push_back(p);
  return out;
}

std::vector<const Profile*> GpuLayout::what_fits() const {
  std::vector<const Profile*> out;
  for (const auto& p : model_->profiles)
    if (fits(p)) out.push_back(&p);
  return out;
}

long GpuLayout::options_score() const {
  long score = 0;
  for (const auto& p : model_->profiles) score += static_cast<long>(free_placements(p).size()) * p.memory_slices;
  return score;
}

std::optional<Placement> GpuLayout::best_placement(const Profile& profile) const {
  std::optional<Placement> best;
  long best_score = -1;
  for (const auto& p : free_placements(profile)) {
    GpuLayout trial = *this;
    (void)trial.place(profile, p);  // free_placements() guarantees it fits
    long score = trial.options_score();
    if (score >= best_score) {  // ">=": later (higher) starts win ties
      best_score = score;
      best = p;
    }
  }
  return best;
}

std::optional<Placement> GpuLayout::first_fit_placement(const Profile& profile) const {
  auto free = free_placements(profile);
  if (free.empty()) return std::nullopt;
  return free.front();
}

std::string GpuLayout::describe() const {
  std::vector<PlacedInstance> sorted = instances_;
  std::ranges::sort(sorted, {}, [](const PlacedInstance& i) { return i.placement.start; });
  std::string out = "[";
  int pos = 0;
  bool first = true;
  auto sep = [&] {
    if (!first) out += '|';
    first = false;
  };
  for (const auto& inst : sorted) {
    if (inst.placement.start > pos) {
      sep();
      out += std::string(static_cast<std::size_t>(inst.placement.start - pos), '.');
    }
    sep();
    out += fmt::format("{}@{}", inst.profile->name, inst.placement.start);
    pos = inst.placement.end();
  }
  if (pos < model_->memory_slices) {
    sep();
    out += std::string(static_cast<std::size_t>(model_->memory_slices - pos), '.');
  }
  return out + "]";
}

}  // namespace vgpu
