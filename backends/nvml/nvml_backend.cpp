#include "nvml_backend.h"

#include <fmt/format.h>

#include "nvml_topology.h"
#include "vgpu/base/crash_point.h"

namespace vgpu::nvml {

std::optional<unsigned> ci_profile_index_for_slices(unsigned slices) {
  switch (slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 7: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    case 8: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    default: return std::nullopt;
  }
}

std::unique_ptr<Backend> Backend::open(std::string library_path) {
  std::unique_ptr<Backend> b(new Backend());
  b->reader_ = Reader::open(std::move(library_path));
  b->unavailable_ = b->reader_->unavailable_reason();
  const auto& lib = b->reader_->library();
  if (!lib) return b;
  auto create_gi =
      lib->symbol<decltype(nvmlDeviceCreateGpuInstanceWithPlacement)>("nvmlDeviceCreateGpuInstanceWithPlacement");
  auto create_ci = lib->symbol<decltype(nvmlGpuInstanceCreateComputeInstance)>("nvmlGpuInstanceCreateComputeInstance");
  auto destroy_ci = lib->symbol<decltype(nvmlComputeInstanceDestroy)>("nvmlComputeInstanceDestroy");
  auto destroy_gi = lib->symbol<decltype(nvmlGpuInstanceDestroy)>("nvmlGpuInstanceDestroy");
  auto set_mig_mode = lib->symbol<decltype(nvmlDeviceSetMigMode)>("nvmlDeviceSetMigMode");
  for (const Error* e : {create_gi ? nullptr : &create_gi.error(), create_ci ? nullptr : &create_ci.error(),
                         destroy_ci ? nullptr : &destroy_ci.error(), destroy_gi ? nullptr : &destroy_gi.error(),
                         set_mig_mode ? nullptr : &set_mig_mode.error()})
    if (e) {
      b->unavailable_ = e->message;
      return b;
    }
  b->api_ = {*create_gi, *create_ci, *destroy_ci, *destroy_gi, *set_mig_mode};
  b->usable_ = true;
  return b;
}

std::optional<GpuLinks> Backend::gpu_links() {
  if (links_ || !usable_) return links_;
  auto gpus = reader_->discover();
  if (!gpus || gpus->size() < 2) return std::nullopt;
  const int count = static_cast<int>(gpus->size());
  auto read = read_topology(*reader_, count);
  if (!read.errors.empty()) return std::nullopt;  // asked again next time, not remembered half
  links_ = links_of(read, count);
  return links_;
}

Result<InstanceInfo> Backend::create_instance(int gpu, int profile_id, Placement placement) {
  if (!usable_) return fail(ErrorCode::unavailable, unavailable_);
  Reader& R = *reader_;
  const Library& L = *R.library();
  auto dev = R.device(gpu);
  if (!dev) return std::unexpected(dev.error());
  if (profile_id < 0 || placement.start < 0 || placement.size <= 0)
    return fail(ErrorCode::invalid_argument, fmt::format("gpu {}: profile {} at {{{},{}}}: negative id or placement",
                                                         gpu, profile_id, placement.start, placement.size));
  nvmlGpuInstancePlacement_t pl{static_cast<unsigned>(placement.start), static_cast<unsigned>(placement.size)};
  nvmlGpuInstance_t gi = nullptr;
  if (auto rc = api_.create_gi_with_placement(*dev, static_cast<unsigned>(profile_id), &pl, &gi); rc != NVML_SUCCESS)
    return std::unexpected(
        L.failure(fmt::format("nvmlDeviceCreateGpuInstanceWithPlacement(gpu {}, profile {}, {{{},{}}})", gpu,
                              profile_id, placement.start, placement.size),
                  rc)
            .error());
  vgpu::crash_point("nvml.after_gi_create");
  nvmlGpuInstanceInfo_t gi_info{};
  if (auto rc = R.api().gpu_instance_get_info(gi, &gi_info); rc != NVML_SUCCESS) {
    // Without its id the GI cannot be described; destroy it so nothing is left half made.
    api_.destroy_gi(gi);
    return std::unexpected(
        L.failure(fmt::format("nvmlGpuInstanceGetInfo(gpu {}, profile {})", gpu, profile_id), rc).error());
  }
  auto undo = [&](Error e) -> Result<InstanceInfo> {
    if (auto rc = api_.destroy_gi(gi); rc != NVML_SUCCESS)
      e.message +=
          fmt::format("; and undoing: nvmlGpuInstanceDestroy(gpu {}, gi {}): {}", gpu, gi_info.id, L.error_string(rc));
    return std::unexpected(std::move(e));
  };
  auto profile = R.gi_profile_by_id(gpu, *dev, static_cast<unsigned>(profile_id));
  if (!profile) return undo(profile.error());
  auto ci_index = ci_profile_index_for_slices(profile->sliceCount);
  if (!ci_index)
    return undo(Error{ErrorCode::internal, fmt::format("gpu {}: profile {}: no compute-instance profile for {} slices",
                                                       gpu, profile_id, profile->sliceCount)});
  nvmlComputeInstanceProfileInfo_t ci_prof{};
  if (auto rc = R.api().gpu_instance_get_ci_profile_info(gi, *ci_index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                                         &ci_prof);
      rc != NVML_SUCCESS)
    return undo(L.failure(fmt::format("nvmlGpuInstanceGetComputeInstanceProfileInfo(gpu {}, gi {}, index {})", gpu,
                                      gi_info.id, *ci_index),
                          rc)
                    .error());
  nvmlComputeInstance_t ci = nullptr;
  if (auto rc = api_.create_ci(gi, ci_prof.id, &ci); rc != NVML_SUCCESS)
    return undo(L.failure(fmt::format("nvmlGpuInstanceCreateComputeInstance(gpu {}, gi {}, profile {})", gpu,
                                      gi_info.id, ci_prof.id),
                          rc)
                    .error());
  vgpu::crash_point("nvml.after_ci_create");
  nvmlComputeInstanceInfo_t ci_info{};
  if (auto rc = R.api().compute_instance_get_info(ci, &ci_info); rc != NVML_SUCCESS) {
    api_.destroy_ci(ci);
    return undo(L.failure(fmt::format("nvmlComputeInstanceGetInfo_v2(gpu {}, gi {})", gpu, gi_info.id), rc).error());
  }
  InstanceInfo out;
  out.gpu = gpu;
  out.gi_id = static_cast<int>(gi_info.id);
  out.ci_id = static_cast<int>(ci_info.id);
  out.profile_id = static_cast<int>(gi_info.profileId);
  out.placement = {static_cast<int>(gi_info.placement.start), static_cast<int>(gi_info.placement.size)};
  out.profile = profile_name_from_device(profile->name);
  auto uuids = R.mig_uuids(gpu, *dev);
  if (!uuids) return std::unexpected(uuids.error().within(fmt::format("gpu {} gi {}: created, but", gpu, out.gi_id)));
  auto it = uuids->find({gi_info.id, ci_info.id});
  if (it == uuids->end())
    return fail(ErrorCode::internal, fmt::format("gpu {} gi {} ci {}: created, but NVML lists no MIG device for it",
                                                 gpu, out.gi_id, *out.ci_id));
  out.mig_uuid = it->second;
  return out;
}

Result<void> Backend::destroy_instance(int gpu, int gi_id) {
  if (!usable_) return fail(ErrorCode::unavailable, unavailable_);
  Reader& R = *reader_;
  const Library& L = *R.library();
  auto dev = R.device(gpu);
  if (!dev) return std::unexpected(dev.error());
  if (gi_id < 0) return fail(ErrorCode::invalid_argument, fmt::format("gpu {}: gi {}: negative id", gpu, gi_id));
  nvmlGpuInstance_t gi = nullptr;
  if (auto rc = R.api().device_get_gpu_instance_by_id(*dev, static_cast<unsigned>(gi_id), &gi); rc != NVML_SUCCESS)
    return std::unexpected(
        L.failure(fmt::format("nvmlDeviceGetGpuInstanceById(gpu {}, gi {})", gpu, gi_id), rc).error());
  auto cis = R.compute_instances(gpu, static_cast<unsigned>(gi_id), gi);
  if (!cis) return std::unexpected(cis.error());
  for (const auto& [ci_id, ci] : *cis)
    if (auto rc = api_.destroy_ci(ci); rc != NVML_SUCCESS)
      return std::unexpected(
          L.failure(fmt::format("nvmlComputeInstanceDestroy(gpu {}, gi {}, ci {})", gpu, gi_id, ci_id), rc).error());
  vgpu::crash_point("nvml.after_ci_destroy");
  if (auto rc = api_.destroy_gi(gi); rc != NVML_SUCCESS)
    return std::unexpected(L.failure(fmt::format("nvmlGpuInstanceDestroy(gpu {}, gi {})", gpu, gi_id), rc).error());
  return {};
}

Result<MigModeSwitch> Backend::set_mig_mode(int gpu, MigMode mode) {
  if (!usable_) return fail(ErrorCode::unavailable, unavailable_);
  if (mode == MigMode::unsupported)
    return fail(ErrorCode::invalid_argument, fmt::format("gpu {}: MIG mode 'unsupported' cannot be asked for", gpu));
  Reader& R = *reader_;
  const Library& L = *R.library();
  auto dev = R.device(gpu);
  if (!dev) return std::unexpected(dev.error());
  const unsigned wanted = mode == MigMode::enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  nvmlReturn_t activation = NVML_SUCCESS;
  const auto call = fmt::format("nvmlDeviceSetMigMode(gpu {}, {})", gpu, to_string(mode));
  if (auto rc = api_.set_mig_mode(*dev, wanted, &activation); rc != NVML_SUCCESS)
    return std::unexpected(L.failure(call, rc).error());
  switch (activation) {
    case NVML_SUCCESS: return MigModeSwitch::activated;
    case NVML_ERROR_IN_USE: return MigModeSwitch::pending_in_use;
    case NVML_ERROR_RESET_REQUIRED: return MigModeSwitch::pending_reset_required;
    default: return std::unexpected(L.failure(call + ": activation", activation).error());
  }
}

}  // namespace vgpu::nvml
