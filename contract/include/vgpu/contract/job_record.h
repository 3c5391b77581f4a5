// jobs/<jobid>.json: the MIG instances the prolog created for one job on this node. Version 2 added
// each instance's placement (its memory slices on the GPU); a version 1 record, written by the
// release before for a job that still runs after an upgrade, reads without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"

namespace vgpu::contract {

inline constexpr std::string_view kJobRecordFormat = "slurm-vgpu-job";
inline constexpr std::uint64_t kJobRecordVersion = 2;

// The memory slices an instance occupies on its GPU: [start, start + size).
struct SlicePlacement {
  std::uint64_t start = 0, size = 0;
  bool operator==(const SlicePlacement&) const = default;
};

struct MigInstance {
  std::string profile;
  std::string mig_uuid;  // "MIG-...", exactly what CUDA_VISIBLE_DEVICES accepts
  std::uint64_t gpu = 0;
  std::optional<SlicePlacement> placement;  // always written; absent only in a version 1 record
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
