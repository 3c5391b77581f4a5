#include "vgpu/contract/job_env.h"

namespace vgpu::contract {

std::vector<EnvVar> job_environment(const JobRecord& record) {
  std::string devices;
  std::string profiles;
  for (const auto& inst : record.instances) {
    if (!devices.empty()) {
      devices += ',';
      profiles += ',';
    }
    devices += inst.mig_uuid;
    profiles += inst.profile;
  }
  return {{"CUDA_VISIBLE_DEVICES", devices},
          {"VGPU_PROFILES", profiles},
          {"VGPU_INSTANCES", std::to_string(record.instances.size())}};
}

std::vector<EnvVar> hidden_environment() {
  return {{"CUDA_VISIBLE_DEVICES", ""}, {"VGPU_PROFILES", ""}, {"VGPU_INSTANCES", "0"}};
}

}  // namespace vgpu::contract
