#include "vgpu/backend/whole_gpus.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpu {

bool is_whole_now(const GpuInfo& gpu, const GpuModel& model) {
  return model.partitioning == Partitioning::none ||
         (model.partitioning == Partitioning::mig && gpu.mig_current == MigMode::disabled);
}

std::optional<InstanceInfo> whole_gpu_instance(const GpuInfo& gpu, const Catalog& catalog) {
  const GpuModel* model = catalog.find_model_for_product(gpu.product_name);
  if (!model || !is_whole_now(gpu, *model)) return std::nullopt;
  const Profile* whole = model->whole_gpu_profile();
  if (!whole || whole->placements.empty()) return std::nullopt;
  InstanceInfo out;
  out.gpu = gpu.index;
  out.gi_id = 0;
  out.ci_id = 0;
  out.profile_id = whole->nvml_profile_id;
  out.placement = whole->placements.front();
  out.mig_uuid = gpu.uuid;
  out.profile = whole->name;
  return out;
}

Result<GpuInfo> WholeGpuBackend::gpu_info(int gpu) {
  auto gpus = inner_->discover();
  if (!gpus) return std::unexpected(gpus.error());
  auto it = std::ranges::find(*gpus, gpu, &GpuInfo::index);
  if (it == gpus->end()) return fail(ErrorCode::not_found, fmt::format("{}: gpu {}: no such GPU", backend_name(), gpu));
  return *it;
}

Result<std::vector<InstanceInfo>> WholeGpuBackend::list_instances(int gpu) {
  auto info = gpu_info(gpu);
  if (!info) return std::unexpected(info.error());
  if (info->mig_current == MigMode::enabled) return inner_->list_instances(gpu);
  std::vector<InstanceInfo> out;
  if (auto whole = whole_gpu_instance(*info, catalog_)) out.push_back(*whole);
  return out;
}

// A process on a GPU with MIG off has no GPU-instance id; it runs in the whole GPU's.
Result<std::vector<GpuProcess>> WholeGpuBackend::compute_processes(int gpu) {
  auto listed = inner_->compute_processes(gpu);
  if (!listed) return listed;
  for (auto& p : *listed)
    if (!p.gi_id) p.gi_id = 0;  // whole_gpu_instance's
  return listed;
}

Result<InstanceInfo> WholeGpuBackend::create_instance(int gpu, int profile_id, Placement placement) {
  if (profile_id != kWholeGpuProfileId) return inner_->create_instance(gpu, profile_id, placement);
  auto info = gpu_info(gpu);
  if (!info) return std::unexpected(info.error());
  auto whole = whole_gpu_instance(*info, catalog_);
  if (!whole)
    return fail(ErrorCode::unavailable,
                fmt::format("gpu {} ({}): the whole GPU needs MIG mode off, and it is {} (pending {})", gpu,
                            info->product_name, to_string(info->mig_current), to_string(info->mig_pending)));
  if (placement != whole->placement)
    return fail(ErrorCode::invalid_argument,
                fmt::format("gpu {}: {} takes every slice {{{},{}}}, not {{{},{}}}", gpu, whole->profile,
                            whole->placement.start, whole->placement.size, placement.start, placement.size));
  return *whole;
}

Result<void> WholeGpuBackend::destroy_instance(int gpu, int gi_id) {
  auto info = gpu_info(gpu);
  if (!info) return std::unexpected(info.error());
  if (info->mig_current == MigMode::enabled) return inner_->destroy_instance(gpu, gi_id);
  if (gi_id != 0 || !whole_gpu_instance(*info, catalog_))
    return fail(ErrorCode::not_found, fmt::format("gpu {}: gi {}: MIG mode is {}, so no such instance", gpu, gi_id,
                                                  to_string(info->mig_current)));
  return {};
}

}  // namespace vgpu
