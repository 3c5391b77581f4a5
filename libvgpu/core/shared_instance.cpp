#include "vgpu/core/shared_instance.h"

#include <string>

namespace vgpu {

int share_capacity_milli(const GpuModel& model, const Profile& profile) {
  if (model.compute_slices <= 0) return 0;
  return 1000 * profile.compute_slices / model.compute_slices;
}

int choose_shared_instance(const GpuModel& model, std::span<const SharedInstance> instances,
                           int milli) {
  int best = -1, best_left = 0;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const SharedInstance& s = instances[i];
    if (!s.profile) continue;
    int left = share_capacity_milli(model, *s.profile) - s.used_milli - milli;
    if (left < 0) continue;
    if (best < 0 || left < best_left) {
      best = static_cast<int>(i);
      best_left = left;
    }
  }
  return best;
}

const Profile* profile_for_shared_instance(const GpuModel& model, int milli,
                                           int min_compute_slices) {
  if (milli < 1 || milli > 1000) return nullptr;
  const Profile* best = nullptr;
  for (const auto& p : model.profiles) {
    // Variants are the same size as their base profile and exist once per GPU; classes are aliases.
    if (p.name.find('+') != std::string::npos || !p.realizes.empty()) continue;
    if (p.compute_slices < min_compute_slices) continue;
    if (share_capacity_milli(model, p) < milli) continue;
    if (!best || p.compute_slices < best->compute_slices ||
        (p.compute_slices == best->compute_slices && p.memory_slices < best->memory_slices))
      best = &p;
  }
  return best;
}

}  // namespace vgpu
