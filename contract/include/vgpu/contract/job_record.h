// jobs/<jobid>.json: the instances the prolog created for one job on this node. Version 2 added
// each instance's placement (its memory slices on the GPU); a version 1 record, written by an
// earlier release for a job that still runs after an upgrade, reads without it. Version 3 names
// each instance's device under "device_uuid" (a MIG UUID or an AMD partition's "GPU-<16 hex>")
// and says what the job got: the GPU model, the instance's memory and its share of the GPU's
// compute, for a job that asked by need (a class) as for one that named a profile. Version 4
// adds "mps_pipe_directory": where a job holding a share of a shared instance finds its CUDA MPS
// control daemon (empty for every other job). A whole NVIDIA GPU (whole.<M>gb, MIG off) is named
// by the GPU's own "GPU-<8-4-4-4-12 hex>" in any version from 3 on, without a new version: only
// a node that serves whole GPUs writes one, and its plugin is of the same release.
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
inline constexpr std::uint64_t kJobRecordVersion = 4;

// The memory slices an instance occupies on its GPU: [start, start + size).
struct SlicePlacement {
  std::uint64_t start = 0, size = 0;
  bool operator==(const SlicePlacement&) const = default;
};

struct MigInstance {
  std::string profile;
  // The device the job is given: "MIG-..." (what CUDA_VISIBLE_DEVICES accepts) or an AMD
  // partition's "GPU-<16 hex digits>" (what ROCR_VISIBLE_DEVICES accepts).
  std::string mig_uuid;
  std::uint64_t gpu = 0;
  std::optional<SlicePlacement> placement;  // always written; absent only in a version 1 record
  // What the job got (version 3; empty/0 in older records): "H100-80GB", MiB, and its compute
  // slices out of the model's ("1/7", an AMD CPX partition "1/8").
  std::string model;
  std::uint64_t memory_mib = 0;
  std::uint64_t compute_slices = 0, model_compute_slices = 0;
  bool operator==(const MigInstance&) const = default;
};

struct JobRecord {
  JobId job_id = 0;
  std::vector<MigInstance> instances;
  // A share's job (one share per job per node): its instance's MPS pipe directory, an absolute path.
  std::string mps_pipe_directory;
  bool operator==(const JobRecord&) const = default;
};

// An AMD partition's UUID as ROCm spells it: "GPU-" and 16 lower-case hex digits.
bool is_amd_partition_uuid(std::string_view uuid);
// A whole NVIDIA GPU's UUID as NVML spells it (nvmlDeviceGetUUID), the device of a whole.<M>gb
// instance: "GPU-" and 8-4-4-4-12 hex digits, "GPU-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f".
bool is_nvidia_gpu_uuid(std::string_view uuid);

// The one writer (the prolog) and the one strict reader (the plugin, the node's recovery).
std::string render_job_record(const JobRecord& record);
// `expected_job_id` guards against a stale record left under a reused name.
Result<JobRecord> parse_job_record(std::string_view text, JobId expected_job_id);

}  // namespace vgpu::contract
