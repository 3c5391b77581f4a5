// The environment a job step gets from its job record: exactly this job's MIG instances.
#pragma once

#include <string>
#include <vector>

#include "vgpu/contract/job_record.h"

namespace vgpu::contract {

struct EnvVar {
  std::string name;
  std::string value;
};

// CUDA_VISIBLE_DEVICES=MIG-a,MIG-b  VGPU_PROFILES=1g.10gb,1g.10gb  VGPU_INSTANCES=2
std::vector<EnvVar> job_environment(const JobRecord& record);

// For a record that exists but cannot be read: hide every GPU rather than expose all of them.
std::vector<EnvVar> hidden_environment();

}  // namespace vgpu::contract
