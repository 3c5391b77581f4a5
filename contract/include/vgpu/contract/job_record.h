// jobs/<jobid>.json: the MIG instances the prolog created for one job on this node.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"

namespace vgpu::contract {

inline constexpr std::string_view kJobRecordFormat = "slurm-vgpu-job";
inline constexpr std::uint64_t kJobRecordVersion = 1;

struct MigInstance {
  std::string profile;
  std::string mig_uuid;  // "MIG-...", exactly what CUDA_VISIBLE_DEVICES accepts
  std::uint64_t gpu = 0;
  bool operator==(const MigInstance&) const = default;
};

struct JobRecord {
  JobId job_id = 0;
  std::vector<MigInstance> instances;
  bool operator==(const JobRecord&) const = default;
};

// The one writer (the prolog) and the one strict reader (the plugin, the node's recovery).
std::string render_job_record(const JobRecord& record);
// `expected_job_id` guards against a stale record left under a reused name.
Result<JobRecord> parse_job_record(std::string_view text, JobId expected_job_id);

}  // namespace vgpu::contract
