#include "nvml_reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpu::nvml {
namespace {

std::string gpu_arg(int gpu) { return fmt::format("gpu {}", gpu); }

template <class Fn>
Result<void> resolve(const Library& lib, Fn*& slot, const char* name) {
  auto s = lib.symbol<Fn>(name);
  if (!s) return std::unexpected(s.error());
  slot = *s;
  return {};
}

MigMode mig_mode_of(unsigned mode) { return mode == NVML_DEVICE_MIG_ENABLE ? MigMode::enabled : MigMode::disabled; }

}  // namespace

bool means_profile_absent(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_INVALID_ARGUMENT;
}

std::unique_ptr<Reader> Reader::open(std::string library_path) {
  std::unique_ptr<Reader> r(new Reader());
  auto lib = Library::open(std::move(library_path));
  if (!lib) {
    r->unavailable_ = lib.error().message;
    return r;
  }
  const Library& L = **lib;
  QueryApi a;
  Result<void> ok;
#define VGPU_RESOLVE(field, name) \
  if (ok) ok = resolve(L, a.field, #name)
  VGPU_RESOLVE(system_get_driver_version, nvmlSystemGetDriverVersion);
  VGPU_RESOLVE(device_get_count, nvmlDeviceGetCount_v2);
  VGPU_RESOLVE(device_get_handle_by_index, nvmlDeviceGetHandleByIndex_v2);
  VGPU_RESOLVE(device_get_name, nvmlDeviceGetName);
  VGPU_RESOLVE(device_get_uuid, nvmlDeviceGetUUID);
  VGPU_RESOLVE(device_get_pci_info, nvmlDeviceGetPciInfo_v3);
  VGPU_RESOLVE(device_get_memory_info, nvmlDeviceGetMemoryInfo);
  VGPU_RESOLVE(device_get_minor_number, nvmlDeviceGetMinorNumber);
  VGPU_RESOLVE(device_get_mig_mode, nvmlDeviceGetMigMode);
  VGPU_RESOLVE(device_get_gi_profile_info, nvmlDeviceGetGpuInstanceProfileInfoV);
  VGPU_RESOLVE(device_get_gi_possible_placements, nvmlDeviceGetGpuInstancePossiblePlacements_v2);
  VGPU_RESOLVE(device_get_gpu_instances, nvmlDeviceGetGpuInstances);
  VGPU_RESOLVE(device_get_gpu_instance_by_id, nvmlDeviceGetGpuInstanceById);
  VGPU_RESOLVE(gpu_instance_get_info, nvmlGpuInstanceGetInfo);
  VGPU_RESOLVE(gpu_instance_get_ci_profile_info, nvmlGpuInstanceGetComputeInstanceProfileInfo);
  VGPU_RESOLVE(gpu_instance_get_compute_instances, nvmlGpuInstanceGetComputeInstances);
  VGPU_RESOLVE(compute_instance_get_info, nvmlComputeInstanceGetInfo_v2);
  VGPU_RESOLVE(device_get_max_mig_device_count, nvmlDeviceGetMaxMigDeviceCount);
  VGPU_RESOLVE(device_get_mig_device_handle_by_index, nvmlDeviceGetMigDeviceHandleByIndex);
  VGPU_RESOLVE(device_get_gpu_instance_id, nvmlDeviceGetGpuInstanceId);
  VGPU_RESOLVE(device_get_compute_instance_id, nvmlDeviceGetComputeInstanceId);
  VGPU_RESOLVE(device_get_topology_common_ancestor, nvmlDeviceGetTopologyCommonAncestor);
  VGPU_RESOLVE(device_get_p2p_status, nvmlDeviceGetP2PStatus);
  VGPU_RESOLVE(device_get_nvlink_state, nvmlDeviceGetNvLinkState);
  VGPU_RESOLVE(device_get_nvlink_remote_pci_info, nvmlDeviceGetNvLinkRemotePciInfo_v2);
#undef VGPU_RESOLVE
  if (!ok) {
    r->unavailable_ = ok.error().message;
    return r;
  }
  if (auto processes =
          L.symbol<decltype(nvmlDeviceGetComputeRunningProcesses_v3)>("nvmlDeviceGetComputeRunningProcesses_v3"))
    a.device_get_compute_running_processes = *processes;
  r->lib_ = std::move(*lib);
  r->api_ = a;
  return r;
}

Result<std::string> Reader::driver_version() {
  if (!lib_) return fail(ErrorCode::unavailable, unavailable_);
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (auto rc = api_.system_get_driver_version(buf, sizeof buf); rc != NVML_SUCCESS)
    return std::unexpected(lib_->failure("nvmlSystemGetDriverVersion()", rc).error());
  return std::string(buf);
}

Result<nvmlDevice_t> Reader::device(int gpu) {
  if (!lib_) return fail(ErrorCode::unavailable, unavailable_);
  nvmlDevice_t dev = nullptr;
  if (gpu < 0) return fail(ErrorCode::invalid_argument, fmt::format("gpu {}: no such GPU", gpu));
  if (auto rc = api_.device_get_handle_by_index(static_cast<unsigned>(gpu), &dev); rc != NVML_SUCCESS)
    return std::unexpected(lib_->failure(fmt::format("nvmlDeviceGetHandleByIndex_v2({})", gpu_arg(gpu)), rc).error());
  return dev;
}

Result<GpuInfo> Reader::gpu_info(int gpu) {
  auto dev = device(gpu);
  if (!dev) return std::unexpected(dev.error());
  auto call = [&](const char* name, nvmlReturn_t rc) -> Result<void> {
    if (rc == NVML_SUCCESS) return {};
    return std::unexpected(lib_->failure(fmt::format("{}({})", name, gpu_arg(gpu)), rc).error());
  };
  GpuInfo info;
  info.index = gpu;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {}, uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  nvmlPciInfo_t pci{};
  nvmlMemory_t mem{};
  unsigned minor = 0, current = 0, pending = 0;
  Result<void> r = call("nvmlDeviceGetName", api_.device_get_name(*dev, name, sizeof name));
  if (r) r = call("nvmlDeviceGetUUID", api_.device_get_uuid(*dev, uuid, sizeof uuid));
  if (r) r = call("nvmlDeviceGetPciInfo_v3", api_.device_get_pci_info(*dev, &pci));
  if (r) r = call("nvmlDeviceGetMemoryInfo", api_.device_get_memory_info(*dev, &mem));
  if (r) r = call("nvmlDeviceGetMinorNumber", api_.device_get_minor_number(*dev, &minor));
  if (!r) return std::unexpected(r.error());
  info.product_name = name;
  info.uuid = uuid;
  pci.busId[sizeof pci.busId - 1] = '\0';
  info.pci_bus_id = pci.busId;
  info.memory_mib = static_cast<int>(mem.total / (1024ULL * 1024ULL));
  info.minor = static_cast<int>(minor);
  nvmlReturn_t rc = api_.device_get_mig_mode(*dev, &current, &pending);
  if (rc == NVML_SUCCESS) {
    info.mig_current = mig_mode_of(current);
    info.mig_pending = mig_mode_of(pending);
  } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
    return std::unexpected(lib_->failure(fmt::format("nvmlDeviceGetMigMode({})", gpu_arg(gpu)), rc).error());
  }
  return info;
}

Result<std::vector<GpuInfo>> Reader::discover() {
  if (!lib_) return std::vector<GpuInfo>{};
  unsigned count = 0;
  if (auto rc = api_.device_get_count(&count); rc != NVML_SUCCESS)
    return std::unexpected(lib_->failure("nvmlDeviceGetCount_v2()", rc).error());
  std::vector<GpuInfo> out;
  for (unsigned i = 0; i < count; ++i) {
    auto info = gpu_info(static_cast<int>(i));
    if (!info) return std::unexpected(info.error());
    out.push_back(std::move(*info));
  }
  return out;
}

Result<std::vector<ProfileRead>> Reader::read_profiles(int gpu) {
  auto dev = device(gpu);
  if (!dev) return std::unexpected(dev.error());
  std::vector<ProfileRead> out;
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx) {
    ProfileRead pr;
    pr.index = idx;
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlReturn_t rc = api_.device_get_gi_profile_info(*dev, idx, &info);
    if (rc != NVML_SUCCESS) {
      pr.info_error =
          lib_->failure(fmt::format("nvmlDeviceGetGpuInstanceProfileInfoV({}, index {})", gpu_arg(gpu), idx), rc);
      out.push_back(std::move(pr));
      continue;
    }
    info.name[sizeof info.name - 1] = '\0';
    pr.info = info;
    auto placement_call =
        fmt::format("nvmlDeviceGetGpuInstancePossiblePlacements_v2({}, profile {})", gpu_arg(gpu), info.id);
    unsigned count = 0;
    rc = api_.device_get_gi_possible_placements(*dev, info.id, nullptr, &count);
    if (rc == NVML_SUCCESS && count > 0) {
      pr.placements.resize(count);
      rc = api_.device_get_gi_possible_placements(*dev, info.id, pr.placements.data(), &count);
      pr.placements.resize(std::min<std::size_t>(count, pr.placements.size()));
    }
    if (rc != NVML_SUCCESS) {
      pr.placements.clear();
      pr.placements_error = lib_->failure(placement_call, rc);
    }
    out.push_back(std::move(pr));
  }
  return out;
}

Result<GpuModel> Reader::read_catalog(int gpu) {
  auto info = gpu_info(gpu);
  if (!info) return std::unexpected(info.error());
  auto reads = read_profiles(gpu);
  if (!reads) return std::unexpected(reads.error());
  std::vector<DeviceProfile> profiles;
  for (const auto& r : *reads) {
    if (r.info_error) {
      if (means_profile_absent(r.info_error->code)) continue;
      return std::unexpected(r.info_error->error());
    }
    if (r.placements_error) return std::unexpected(r.placements_error->error());
    DeviceProfile d;
    d.index = static_cast<int>(r.index);
    d.id = static_cast<int>(r.info->id);
    d.name = r.info->name;
    d.compute_slices = static_cast<int>(r.info->sliceCount);
    d.instance_count = static_cast<int>(r.info->instanceCount);
    d.sm_count = static_cast<int>(r.info->multiprocessorCount);
    d.memory_mib = static_cast<int>(r.info->memorySizeMB);
    for (const auto& p : r.placements) d.placements.push_back({static_cast<int>(p.start), static_cast<int>(p.size)});
    profiles.push_back(std::move(d));
  }
  return within(model_from_device(info->product_name, info->memory_mib, profiles),
                fmt::format("gpu {} ({})", gpu, info->uuid));
}

Result<nvmlGpuInstanceProfileInfo_v2_t> Reader::gi_profile_by_id(int gpu, nvmlDevice_t dev, unsigned id) {
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlReturn_t rc = api_.device_get_gi_profile_info(dev, idx, &info);
    if (rc == NVML_SUCCESS && info.id == id) return info;
    if (rc != NVML_SUCCESS && !means_profile_absent(rc))
      return std::unexpected(
          lib_->failure(fmt::format("nvmlDeviceGetGpuInstanceProfileInfoV({}, index {})", gpu_arg(gpu), idx), rc)
              .error());
  }
  return fail(ErrorCode::not_found, fmt::format("gpu {}: no GPU-instance profile with id {}", gpu, id));
}

Result<std::map<std::pair<unsigned, unsigned>, std::string>> Reader::mig_uuids(int gpu, nvmlDevice_t dev) {
  std::map<std::pair<unsigned, unsigned>, std::string> out;
  unsigned max = 0;
  if (auto rc = api_.device_get_max_mig_device_count(dev, &max); rc != NVML_SUCCESS)
    return std::unexpected(lib_->failure(fmt::format("nvmlDeviceGetMaxMigDeviceCount({})", gpu_arg(gpu)), rc).error());
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t rc = api_.device_get_mig_device_handle_by_index(dev, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND) continue;  // no MIG device at this index
    auto step = [&](const char* name, nvmlReturn_t code) -> Result<void> {
      if (code == NVML_SUCCESS) return {};
      return std::unexpected(lib_->failure(fmt::format("{}({}, mig index {})", name, gpu_arg(gpu), i), code).error());
    };
    unsigned gi = 0, ci = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    Result<void> r = step("nvmlDeviceGetMigDeviceHandleByIndex", rc);
    if (r) r = step("nvmlDeviceGetGpuInstanceId", api_.device_get_gpu_instance_id(mig, &gi));
    if (r) r = step("nvmlDeviceGetComputeInstanceId", api_.device_get_compute_instance_id(mig, &ci));
    if (r) r = step("nvmlDeviceGetUUID", api_.device_get_uuid(mig, uuid, sizeof uuid));
    if (!r) return std::unexpected(r.error());
    out[{gi, ci}] = uuid;
  }
  return out;
}

Result<std::vector<std::pair<unsigned, nvmlComputeInstance_t>>> Reader::compute_instances(int gpu, unsigned gi_id,
                                                                                          nvmlGpuInstance_t gi) {
  std::vector<std::pair<unsigned, nvmlComputeInstance_t>> out;
  for (unsigned idx = 0; idx < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlComputeInstanceProfileInfo_t prof{};
    nvmlReturn_t rc =
        api_.gpu_instance_get_ci_profile_info(gi, idx, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &prof);
    if (rc != NVML_SUCCESS) {
      if (means_profile_absent(rc)) continue;
      return std::unexpected(
          lib_->failure(fmt::format("nvmlGpuInstanceGetComputeInstanceProfileInfo({}, gi {}, index {})", gpu_arg(gpu),
                                    gi_id, idx),
                        rc)
              .error());
    }
    std::vector<nvmlComputeInstance_t> cis(std::max(prof.instanceCount, 1u));
    unsigned n = 0;
    rc = api_.gpu_instance_get_compute_instances(gi, prof.id, cis.data(), &n);
    if (rc != NVML_SUCCESS)
      return std::unexpected(lib_->failure(fmt::format("nvmlGpuInstanceGetComputeInstances({}, gi {}, profile {})",
                                                       gpu_arg(gpu), gi_id, prof.id),
                                           rc)
                                 .error());
    for (unsigned k = 0; k < n && k < cis.size(); ++k) {
      nvmlComputeInstanceInfo_t ci{};
      rc = api_.compute_instance_get_info(cis[k], &ci);
      if (rc != NVML_SUCCESS)
        return std::unexpected(
            lib_->failure(fmt::format("nvmlComputeInstanceGetInfo_v2({}, gi {})", gpu_arg(gpu), gi_id), rc).error());
      out.emplace_back(ci.id, cis[k]);
    }
  }
  std::ranges::sort(out, {}, &std::pair<unsigned, nvmlComputeInstance_t>::first);
  return out;
}

// One call on the GPU's own handle: in MIG mode it lists every instance's processes, each with its
// GPU-instance id, to root (nvml.h). The list may grow between the count and the fill: ask again.
Result<std::vector<GpuProcess>> Reader::compute_processes(int gpu) {
  if (lib_ && !api_.device_get_compute_running_processes)
    return fail(ErrorCode::unavailable,
                fmt::format("{}: no nvmlDeviceGetComputeRunningProcesses_v3 (a driver before 510)", lib_->path()));
  auto dev = device(gpu);
  if (!dev) return std::unexpected(dev.error());
  constexpr unsigned kNoId = 0xFFFFFFFF;
  std::vector<nvmlProcessInfo_t> infos(8);
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = api_.device_get_compute_running_processes(*dev, &count, infos.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      infos.resize(count + 8);
      continue;
    }
    if (rc != NVML_SUCCESS)
      return std::unexpected(
          lib_->failure(fmt::format("nvmlDeviceGetComputeRunningProcesses_v3({})", gpu_arg(gpu)), rc).error());
    std::vector<GpuProcess> out;
    for (unsigned i = 0; i < count && i < infos.size(); ++i)
      out.push_back({static_cast<int>(infos[i].pid),
                     infos[i].gpuInstanceId == kNoId ? std::nullopt : std::optional<int>(infos[i].gpuInstanceId)});
    return out;
  }
  return fail(ErrorCode::unavailable,
              fmt::format("nvmlDeviceGetComputeRunningProcesses_v3({}): the list kept growing", gpu_arg(gpu)));
}

Result<std::vector<InstanceInfo>> Reader::list_instances(int gpu) {
  auto dev = device(gpu);
  if (!dev) return std::unexpected(dev.error());
  auto uuids = mig_uuids(gpu, *dev);
  if (!uuids) return std::unexpected(uuids.error());
  std::vector<InstanceInfo> out;
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlReturn_t rc = api_.device_get_gi_profile_info(*dev, idx, &info);
    if (rc != NVML_SUCCESS) {
      if (means_profile_absent(rc)) continue;
      return std::unexpected(
          lib_->failure(fmt::format("nvmlDeviceGetGpuInstanceProfileInfoV({}, index {})", gpu_arg(gpu), idx), rc)
              .error());
    }
    // The buffer must hold every instance the profile allows (NVML does not check its size).
    std::vector<nvmlGpuInstance_t> gis(std::max(info.instanceCount, 1u));
    unsigned n = 0;
    rc = api_.device_get_gpu_instances(*dev, info.id, gis.data(), &n);
    if (rc != NVML_SUCCESS)
      return std::unexpected(
          lib_->failure(fmt::format("nvmlDeviceGetGpuInstances({}, profile {})", gpu_arg(gpu), info.id), rc).error());
    for (unsigned k = 0; k < n && k < gis.size(); ++k) {
      nvmlGpuInstanceInfo_t gi{};
      rc = api_.gpu_instance_get_info(gis[k], &gi);
      if (rc != NVML_SUCCESS)
        return std::unexpected(
            lib_->failure(fmt::format("nvmlGpuInstanceGetInfo({}, profile {})", gpu_arg(gpu), info.id), rc).error());
      InstanceInfo inst;
      inst.gpu = gpu;
      inst.gi_id = static_cast<int>(gi.id);
      inst.profile_id = static_cast<int>(gi.profileId);
      inst.placement = {static_cast<int>(gi.placement.start), static_cast<int>(gi.placement.size)};
      inst.profile = profile_name_from_device(info.name);
      auto cis = compute_instances(gpu, gi.id, gis[k]);
      if (!cis) return std::unexpected(cis.error());
      if (!cis->empty()) {
        unsigned ci = cis->front().first;
        inst.ci_id = static_cast<int>(ci);
        if (auto it = uuids->find({gi.id, ci}); it != uuids->end()) inst.mig_uuid = it->second;
      }
      out.push_back(std::move(inst));
    }
  }
  std::ranges::sort(out, {}, &InstanceInfo::gi_id);
  return out;
}

}  // namespace vgpu::nvml
