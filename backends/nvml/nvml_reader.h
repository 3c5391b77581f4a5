// The read-only half of the NVML backend. It resolves only query entry points, so a program
// linked against this alone (vgpu-nvml-probe) cannot change a GPU: the names of the mutating
// NVML calls do not even appear in it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "nvml_abi.h"
#include "nvml_error.h"
#include "nvml_library.h"
#include "vgpu/backend/backend.h"
#include "vgpu/backend/backend_catalog.h"

namespace vgpu::nvml {

struct QueryApi {
  decltype(&nvmlSystemGetDriverVersion) system_get_driver_version = nullptr;
  decltype(&nvmlDeviceGetCount_v2) device_get_count = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) device_get_handle_by_index = nullptr;
  decltype(&nvmlDeviceGetName) device_get_name = nullptr;
  decltype(&nvmlDeviceGetUUID) device_get_uuid = nullptr;
  decltype(&nvmlDeviceGetPciInfo_v3) device_get_pci_info = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) device_get_memory_info = nullptr;
  decltype(&nvmlDeviceGetMinorNumber) device_get_minor_number = nullptr;
  decltype(&nvmlDeviceGetMigMode) device_get_mig_mode = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceProfileInfoV) device_get_gi_profile_info = nullptr;
  decltype(&nvmlDeviceGetGpuInstancePossiblePlacements_v2) device_get_gi_possible_placements = nullptr;
  decltype(&nvmlDeviceGetGpuInstances) device_get_gpu_instances = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceById) device_get_gpu_instance_by_id = nullptr;
  decltype(&nvmlGpuInstanceGetInfo) gpu_instance_get_info = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo) gpu_instance_get_ci_profile_info = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstances) gpu_instance_get_compute_instances = nullptr;
  decltype(&nvmlComputeInstanceGetInfo_v2) compute_instance_get_info = nullptr;
  decltype(&nvmlDeviceGetMaxMigDeviceCount) device_get_max_mig_device_count = nullptr;
  decltype(&nvmlDeviceGetMigDeviceHandleByIndex) device_get_mig_device_handle_by_index = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceId) device_get_gpu_instance_id = nullptr;
  decltype(&nvmlDeviceGetComputeInstanceId) device_get_compute_instance_id = nullptr;
  decltype(&nvmlDeviceGetTopologyCommonAncestor) device_get_topology_common_ancestor = nullptr;
  decltype(&nvmlDeviceGetP2PStatus) device_get_p2p_status = nullptr;
  decltype(&nvmlDeviceGetNvLinkState) device_get_nvlink_state = nullptr;
  decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2) device_get_nvlink_remote_pci_info = nullptr;
  // Optional (drivers before 510 lack it): null means the reader cannot list processes.
  decltype(&nvmlDeviceGetComputeRunningProcesses_v3) device_get_compute_running_processes = nullptr;
};

// One GPU-instance profile index as the device answered it, kept raw for the probe's recording.
struct ProfileRead {
  unsigned index = 0;
  std::optional<nvmlGpuInstanceProfileInfo_v2_t> info;
  std::optional<Failure> info_error;
  std::vector<nvmlGpuInstancePlacement_t> placements;
  std::optional<Failure> placements_error;
};

// NOT_SUPPORTED / INVALID_ARGUMENT for a profile index: the device does not offer that profile.
bool means_profile_absent(nvmlReturn_t code);

class Reader : public GpuReader {
 public:
  // Never fails: without a loadable library or driver the reader discovers no GPUs and
  // unavailable_reason() says why.
  static std::unique_ptr<Reader> open(std::string library_path = {});

  [[nodiscard]] std::string_view backend_name() const override { return "nvml"; }
  Result<std::vector<GpuInfo>> discover() override;
  [[nodiscard]] std::string unavailable_reason() const override { return unavailable_; }
  Result<GpuModel> read_catalog(int gpu) override;
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override;
  Result<std::vector<GpuProcess>> compute_processes(int gpu) override;
  // Memory per instance, and GPM utilisation where the GPU has it (nvml_gpm.h).
  std::unique_ptr<ActivitySampler> activity_sampler() override;

  // Every profile index 0..NVML_GPU_INSTANCE_PROFILE_COUNT-1 with its answer or NVML error.
  Result<std::vector<ProfileRead>> read_profiles(int gpu);
  Result<std::string> driver_version();
  // Attributes of one GPU; a MIG-mode NOT_SUPPORTED is MigMode::unsupported, not an error.
  Result<GpuInfo> gpu_info(int gpu);

  [[nodiscard]] const std::shared_ptr<Library>& library() const { return lib_; }
  [[nodiscard]] const QueryApi& api() const { return api_; }
  Result<nvmlDevice_t> device(int gpu);
  // The GI profile with this id (searching profile indices), for its slice count.
  Result<nvmlGpuInstanceProfileInfo_v2_t> gi_profile_by_id(int gpu, nvmlDevice_t dev, unsigned id);
  // MIG device UUIDs keyed by (gi id, ci id).
  Result<std::map<std::pair<unsigned, unsigned>, std::string>> mig_uuids(int gpu, nvmlDevice_t dev);
  // Compute instances of one GI, lowest id first: (ci id, handle).
  Result<std::vector<std::pair<unsigned, nvmlComputeInstance_t>>> compute_instances(int gpu, unsigned gi_id,
                                                                                    nvmlGpuInstance_t gi);

 protected:
  Reader() = default;

 private:
  std::shared_ptr<Library> lib_;
  QueryApi api_;
  std::string unavailable_;
};

}  // namespace vgpu::nvml
