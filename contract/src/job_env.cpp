#include "vgpu/contract/job_env.h"

#include <algorithm>
#include <charconv>

#include "vgpu/contract/node_files.h"

namespace vgpu::contract {

std::vector<EnvVar> job_environment(const JobRecord& record) {
  std::string devices;
  std::string profiles;
  std::string placements;
  for (const auto& inst : record.instances) {
    if (!devices.empty()) {
      devices += ',';
      profiles += ',';
      placements += ',';
    }
    devices += inst.mig_uuid;
    profiles += inst.profile;
    // GPU index, then the memory slices (first-last) where the record has them (version 2).
    placements += std::to_string(inst.gpu);
    if (inst.placement)
      placements += ':' + std::to_string(inst.placement->start) + '-' +
                    std::to_string(inst.placement->start + inst.placement->size - 1);
  }
  const bool amd = !record.instances.empty() && is_amd_partition_uuid(record.instances.front().mig_uuid);
  std::vector<EnvVar> env = {{amd ? "ROCR_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES", devices},
                             {"VGPU_PROFILES", profiles},
                             {"VGPU_INSTANCES", std::to_string(record.instances.size())},
                             {"VGPU_PLACEMENT", placements}};
  // What the job got, where the record says it (version 3): one model per node.
  const bool described = !record.instances.empty() &&
                         std::ranges::all_of(record.instances, [](const MigInstance& i) { return !i.model.empty(); });
  if (described) {
    std::string memory, compute;
    for (const auto& inst : record.instances) {
      memory += (memory.empty() ? "" : ",") + std::to_string(inst.memory_mib);
      compute += (compute.empty() ? "" : ",") + std::to_string(inst.compute_slices) + "/" +
                 std::to_string(inst.model_compute_slices);
    }
    env.push_back({"VGPU_MODEL", record.instances.front().model});
    env.push_back({"VGPU_MEMORY_MIB", memory});
    env.push_back({"VGPU_COMPUTE", compute});
  }
  // A share's job reaches its instance through the instance's MPS daemon, whose limits it cannot raise.
  if (!record.mps_pipe_directory.empty()) env.push_back({"CUDA_MPS_PIPE_DIRECTORY", record.mps_pipe_directory});
  if (amd) {
    // HIP numbers the devices ROCr lets through from 0, and honours CUDA_VISIBLE_DEVICES as well:
    // both are set to exactly those, so nothing a job inherited selects another device.
    std::string ordinals;
    for (std::size_t i = 0; i < record.instances.size(); ++i) ordinals += (i ? "," : "") + std::to_string(i);
    env.push_back({"HIP_VISIBLE_DEVICES", ordinals});
    env.push_back({"CUDA_VISIBLE_DEVICES", ordinals});
  }
  return env;
}

std::vector<EnvVar> hidden_environment() {
  return {{"CUDA_VISIBLE_DEVICES", ""}, {"VGPU_PROFILES", ""},   {"VGPU_INSTANCES", "0"}, {"VGPU_PLACEMENT", ""},
          {"VGPU_MODEL", ""},           {"VGPU_MEMORY_MIB", ""}, {"VGPU_COMPUTE", ""},    {"ROCR_VISIBLE_DEVICES", ""}};
}

std::optional<JobId> job_of_stepd_title(std::string_view title) {
  constexpr std::string_view kPrefix = "slurmstepd: [";
  if (!title.starts_with(kPrefix)) return std::nullopt;
  title.remove_prefix(kPrefix.size());
  const auto digits = std::min(title.find_first_not_of("0123456789"), title.size());
  const auto job = parse_job_id(title.substr(0, digits));
  if (!job) return std::nullopt;
  const auto rest = title.substr(digits);
  // A job id alone proves nothing: the step part that follows it must be there too.
  if (rest.size() < 2 || (rest.front() != '.' && rest.front() != '+')) return std::nullopt;
  const auto close = rest.find(']');
  if (close == std::string_view::npos || close < 2) return std::nullopt;
  return *job;
}

}  // namespace vgpu::contract
