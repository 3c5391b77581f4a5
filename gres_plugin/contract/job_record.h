// jobs/<jobid>.json: the MIG instances the prolog created for one job on this node.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/error.h"

namespace vgpu::gres {

inline constexpr std::string_view kJobRecordFormat = "slurm-vgpu-job";
inline constexpr std::uint64_t kJobRecordVersion = 1;

struct MigInstance {
  std::string profile;
  std::string mig_uuid;  // "MIG-...", exactly what CUDA_VISIBLE_DEVICES accepts
  std::uint64_t gpu = 0;
};

struct JobRecord {
  std::uint64_t job_id = 0;
  std::vector<MigInstance> instances;
};

// `expected_job_id` guards against a stale record left under a reused name.
Result<JobRecord> parse_job_record(std::string_view text, std::uint64_t expected_job_id);

}  // namespace vgpu::gres
