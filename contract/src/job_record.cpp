#include "vgpu/contract/job_record.h"

#include <algorithm>
#include <cstdio>

#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {
namespace {

bool is_valid_uuid_text(std::string_view uuid, std::string_view prefix) {
  if (uuid.size() <= prefix.size() || uuid.size() > 128 || !uuid.starts_with(prefix)) return false;
  for (char c : uuid) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '/';
    if (!ok) return false;
  }
  return true;
}

bool is_valid_mig_uuid(std::string_view uuid) { return is_valid_uuid_text(uuid, "MIG-"); }

// No GPU has more than 8 memory slices; the bound keeps a corrupt record from naming absurd ones.
constexpr std::uint64_t kMaxMemorySlices = 64;

Result<SlicePlacement> parse_placement(const nlohmann::json& obj) {
  if (auto ok = require_keys(obj, "placement", {"start", "size"}); !ok) return std::unexpected(ok.error());
  auto start = require_unsigned(obj, "start");
  if (!start) return std::unexpected(start.error().within("placement"));
  auto size = require_unsigned(obj, "size");
  if (!size) return std::unexpected(size.error().within("placement"));
  if (*size == 0 || *start >= kMaxMemorySlices || *size > kMaxMemorySlices - *start)
    return fail(ErrorCode::corrupt, "placement {" + std::to_string(*start) + "," + std::to_string(*size) +
                                        "} is not a range of memory slices");
  return SlicePlacement{*start, *size};
}

// Errors other than the keys' are prefixed by the caller with `where`.
Result<MigInstance> parse_instance(const nlohmann::json& obj, const std::string& where, std::uint64_t version) {
  const char* uuid_key = version >= 3 ? "device_uuid" : "mig_uuid";
  auto keys =
      version == 1 ? require_keys(obj, where, {"profile", "mig_uuid", "gpu"})
      : version == 2
          ? require_keys(obj, where, {"profile", uuid_key, "gpu", "placement"})
          : require_keys(obj, where, {"profile", uuid_key, "gpu", "placement", "model", "memory_mib", "compute"});
  if (!keys) return std::unexpected(keys.error());
  MigInstance inst;
  auto profile = require_string(obj, "profile");
  if (!profile) return std::unexpected(profile.error());
  if (!is_valid_type_name(*profile)) return fail(ErrorCode::corrupt, "profile '" + *profile + "' is not valid");
  inst.profile = *profile;
  auto uuid = require_string(obj, uuid_key);
  if (!uuid) return std::unexpected(uuid.error());
  if (version >= 3) {
    if (!is_valid_mig_uuid(*uuid) && !is_nvidia_gpu_uuid(*uuid) && !is_amd_partition_uuid(*uuid))
      return fail(ErrorCode::corrupt, "device_uuid '" + *uuid +
                                          "' is neither a MIG UUID, a whole NVIDIA GPU's GPU-<8-4-4-4-12 hex digits> "
                                          "nor an AMD partition's GPU-<16 hex digits>");
  } else if (!is_valid_mig_uuid(*uuid)) {
    return fail(ErrorCode::corrupt, "mig_uuid '" + *uuid + "' is not a MIG UUID");
  }
  inst.mig_uuid = *uuid;
  auto gpu = require_unsigned(obj, "gpu");
  if (!gpu) return std::unexpected(gpu.error());
  inst.gpu = *gpu;
  if (version >= 2) {
    auto placement = parse_placement(obj.at("placement"));
    if (!placement) return std::unexpected(placement.error());
    inst.placement = *placement;
  }
  if (version >= 3) {
    auto model = require_string(obj, "model");
    if (!model) return std::unexpected(model.error());
    if (!is_valid_type_name(*model)) return fail(ErrorCode::corrupt, "model '" + *model + "' is not valid");
    inst.model = *model;
    auto mib = require_unsigned(obj, "memory_mib");
    if (!mib) return std::unexpected(mib.error());
    inst.memory_mib = *mib;
    // "<slices>/<of>", 1 <= slices <= of <= 64
    auto compute = require_string(obj, "compute");
    if (!compute) return std::unexpected(compute.error());
    unsigned a = 0, b = 0;
    char extra = 0;
    if (std::sscanf(compute->c_str(), "%u/%u%c", &a, &b, &extra) != 2 || a == 0 || b == 0 || a > b || b > 64 ||
        *compute != std::to_string(a) + "/" + std::to_string(b))
      return fail(ErrorCode::corrupt, "compute '" + *compute + "' is not <slices>/<of the GPU's>");
    inst.compute_slices = a;
    inst.model_compute_slices = b;
  }
  return inst;
}

}  // namespace

bool is_amd_partition_uuid(std::string_view uuid) {
  if (uuid.size() != 20 || !uuid.starts_with("GPU-")) return false;
  return std::ranges::all_of(uuid.substr(4), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_nvidia_gpu_uuid(std::string_view uuid) {
  constexpr std::string_view kShape = "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
  if (uuid.size() != kShape.size()) return false;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    const char c = uuid[i];
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (kShape[i] == 'x' ? !hex : c != kShape[i]) return false;
  }
  return true;
}

std::string render_job_record(const JobRecord& record) {
  nlohmann::json instances = nlohmann::json::array();
  for (const auto& inst : record.instances) {
    nlohmann::json i = {
        {"profile", inst.profile},
        {"device_uuid", inst.mig_uuid},
        {"gpu", inst.gpu},
        {"model", inst.model},
        {"memory_mib", inst.memory_mib},
        {"compute", std::to_string(inst.compute_slices) + "/" + std::to_string(inst.model_compute_slices)}};
    // The writer always knows the placement; a record without one is only ever read (version 1).
    const SlicePlacement at = inst.placement.value_or(SlicePlacement{});
    i["placement"] = {{"start", at.start}, {"size", at.size}};
    instances.push_back(std::move(i));
  }
  nlohmann::json doc = {{"format", kJobRecordFormat},
                        {"version", kJobRecordVersion},
                        {"job_id", record.job_id},
                        {"instances", instances},
                        {"mps_pipe_directory", record.mps_pipe_directory}};
  return doc.dump(2) + "\n";
}

Result<JobRecord> parse_job_record(std::string_view text, JobId expected_job_id) {
  auto doc = parse_strict_json(text);
  if (!doc) return std::unexpected(doc.error());
  // Version 1: no placements (written by the release before last for a job still running);
  // version 2: MIG instances only, under "mig_uuid"; version 3: no MPS pipe directory.
  std::uint64_t version = kJobRecordVersion;
  if (doc->is_object() && doc->contains("version") &&
      (doc->at("version") == 1 || doc->at("version") == 2 || doc->at("version") == 3))
    version = doc->at("version").get<std::uint64_t>();
  if (auto ok = version >= 4
                    ? require_exact_keys(*doc, {"format", "version", "job_id", "instances", "mps_pipe_directory"})
                    : require_exact_keys(*doc, {"format", "version", "job_id", "instances"});
      !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = require_header(*doc, kJobRecordFormat, version); !ok) return std::unexpected(ok.error());
  JobRecord record;
  auto job_id = require_unsigned(*doc, "job_id");
  if (!job_id) return std::unexpected(job_id.error());
  if (*job_id != expected_job_id) {
    return fail(ErrorCode::corrupt,
                "field 'job_id' is " + std::to_string(*job_id) + ", expected " + std::to_string(expected_job_id));
  }
  record.job_id = expected_job_id;
  if (version >= 4) {
    const auto& dir = doc->at("mps_pipe_directory");
    if (!dir.is_string()) return fail(ErrorCode::corrupt, "field 'mps_pipe_directory' must be a string");
    record.mps_pipe_directory = dir.get<std::string>();
    // It becomes an environment variable of the job's processes: an absolute path, one line.
    const bool odd = std::ranges::any_of(record.mps_pipe_directory,
                                         [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    if (!record.mps_pipe_directory.empty() && (record.mps_pipe_directory.front() != '/' || odd))
      return fail(ErrorCode::corrupt, "field 'mps_pipe_directory' '" + record.mps_pipe_directory +
                                          "' is not an absolute path of printable characters");
  }
  const auto& instances = doc->at("instances");
  if (!instances.is_array()) return fail(ErrorCode::corrupt, "field 'instances' must be an array");
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const std::string where = "instances[" + std::to_string(i) + "]";
    auto inst = parse_instance(instances[i], where, version);
    if (!inst) {
      if (inst.error().message.starts_with(where)) return std::unexpected(inst.error());
      return std::unexpected(inst.error().within(where));
    }
    if (!record.instances.empty() &&
        is_amd_partition_uuid(record.instances[0].mig_uuid) != is_amd_partition_uuid(inst->mig_uuid))
      return fail(ErrorCode::corrupt,
                  where + ": mixes MIG instances and AMD partitions (a node has GPUs of one vendor)");
    for (const auto& seen : record.instances) {
      if (seen.mig_uuid == inst->mig_uuid) {
        return fail(ErrorCode::corrupt,
                    "instances[" + std::to_string(i) + "]: mig_uuid '" + inst->mig_uuid + "' listed twice");
      }
    }
    record.instances.push_back(std::move(*inst));
  }
  return record;
}

}  // namespace vgpu::contract
