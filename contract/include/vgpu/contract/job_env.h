// The environment a job step gets from its job record: exactly this job's instances.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/job_id.h"

#include "vgpu/contract/job_record.h"

namespace vgpu::contract {

struct EnvVar {
  std::string name;
  std::string value;
};

// CUDA_VISIBLE_DEVICES=MIG-a,MIG-b  VGPU_PROFILES=1g.10gb,1g.10gb  VGPU_INSTANCES=2
// VGPU_PLACEMENT=0:4-4,1:0-0 (each instance's GPU index and memory slices, in the same order).
// From a version 3 record, what the job got: VGPU_MODEL=H100-80GB, VGPU_MEMORY_MIB=9984,9984 and
// VGPU_COMPUTE=1/7,1/7 (each instance's compute slices of the GPU's).
// AMD partitions: ROCR_VISIBLE_DEVICES=GPU-<hex>,... in the first place, then the same VGPU_*
// variables, and HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES=0,1,... (HIP's ordinals of them).
std::vector<EnvVar> job_environment(const JobRecord& record);

// For a record that exists but cannot be read: hide every GPU rather than expose all of them
// (ROCR_VISIBLE_DEVICES empty: ROCr shows no device).
std::vector<EnvVar> hidden_environment();

// The job a slurmstepd serves, from its process title ("slurmstepd: [1234.0]", "[1234.batch]",
// "[1234.extern]", "[1234+1.0]" for a heterogeneous job's component, "[1234.0 stepmgr]"). slurmstepd
// sets it from slurmd's launch message before any GRES plugin fills a step's environment, and the
// step's own processes cannot write it, unlike SLURM_JOB_ID in that environment, which an srun
// client sends. Anything else (another program, a title without a job id): nullopt.
std::optional<JobId> job_of_stepd_title(std::string_view title);

}  // namespace vgpu::contract
