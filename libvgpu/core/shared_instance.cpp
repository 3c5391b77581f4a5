#include "vgpu/core/shared_instance.h"

#include <fmt/format.h>

#include <string>

namespace vgpu {

int share_capacity_milli(const GpuModel& model, const Profile& profile) {
  if (model.compute_slices <= 0) return 0;
  return 1000 * profile.compute_slices / model.compute_slices;
}

int choose_shared_instance(const GpuModel& model, std::span<const SharedInstance> instances, int milli) {
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

const Profile* profile_for_shared_instance(const GpuModel& model, int milli, int min_compute_slices) {
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

Result<ShareLimits> share_limits(const Profile& instance, int shares) {
  if (shares < 2 || shares > kMaxSharesPerInstance)
    return fail(ErrorCode::invalid_argument,
                fmt::format("profile {}: {} shares: an instance holds 2 to {} shares (MPS serves at most {} "
                            "clients per device)",
                            instance.name, shares, kMaxSharesPerInstance, kMaxSharesPerInstance));
  const int memory = instance.memory_mib / shares;
  if (memory < kMinShareMemoryMib)
    return fail(ErrorCode::invalid_argument,
                fmt::format("profile {}: {} shares of {} MiB leave {} MiB each, below the {} MiB a share "
                            "needs (a CUDA context alone takes part of its cap)",
                            instance.name, shares, instance.memory_mib, memory, kMinShareMemoryMib));
  return ShareLimits{memory, 100 / shares};
}

}  // namespace vgpu
