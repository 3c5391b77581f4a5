// The gres/vgpu plugin's node file contract (contract/): advertisement.json and
// jobs/<id>.json as slurmd reads them, the strict JSON reader under both, the reported-count
// arithmetic and job environment built from them, and the node-name / job-id strings the plugin
// takes from its surroundings. This code runs inside slurmd: nothing may crash or throw.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vgpu/contract/advertisement.h"
#include "vgpu/contract/job_env.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/contract/reported_counts.h"
#include "vgpu/contract/strict_json.h"
#include "fuzz_check.h"

namespace {

using vgpu::contract::Advertisement;

void check_reported(const vgpu::Result<Advertisement>& adv) {
  const std::set<std::string, std::less<>> before{"1g.10gb", "7g.80gb"};
  std::uint64_t sum = 0;
  bool overflow = false;
  if (adv) {
    for (const auto& [type, count] : adv->counts) {
      overflow = overflow || count > std::numeric_limits<std::uint64_t>::max() - sum;
      if (!overflow) sum += count;
    }
  }
  for (std::uint64_t total :
       {std::uint64_t{0}, std::uint64_t{7}, sum, sum + 1, std::numeric_limits<std::uint64_t>::max()}) {
    const auto out = vgpu::contract::reported_counts(adv, total, before);
    // The node's reported total never changes (slurmctld drains a node whose total does).
    std::uint64_t reported = out.free;
    for (const auto& tc : out.advertised) {
      FUZZ_CHECK(reported + tc.count >= reported);
      reported += tc.count;
      FUZZ_CHECK(!vgpu::contract::is_reserved_type(tc.type));
    }
    FUZZ_CHECK(reported == total);
    // Every type reported before is reported again; sorted by name, no duplicates.
    for (const auto& type : before) {
      bool found = false;
      for (const auto& tc : out.advertised) found = found || tc.type == type;
      FUZZ_CHECK(found);
    }
    for (std::size_t i = 1; i < out.advertised.size(); ++i)
      FUZZ_CHECK(out.advertised[i - 1].type < out.advertised[i].type);
    const bool usable = adv && !overflow && sum <= total;
    FUZZ_CHECK(out.problem.empty() == usable);
  }
}

void check_advertisement(std::string_view text, std::string_view node) {
  auto adv = vgpu::contract::parse_advertisement(text, node);
  if (adv) {
    FUZZ_CHECK(adv->node == node);
    for (const auto& [type, count] : adv->counts) FUZZ_CHECK(vgpu::contract::is_valid_type_name(type));
  } else {
    FUZZ_CHECK(!adv.error().message.empty());
  }
  check_reported(adv);
}

void check_job_record(std::string_view text, vgpu::JobId job_id) {
  auto record = vgpu::contract::parse_job_record(text, job_id);
  if (!record) {
    FUZZ_CHECK(!record.error().message.empty());
    return;
  }
  FUZZ_CHECK(record->job_id == job_id);
  std::string devices;
  for (const auto& inst : record->instances) {
    FUZZ_CHECK(vgpu::contract::is_valid_type_name(inst.profile));
    FUZZ_CHECK(inst.mig_uuid.starts_with("MIG-") || vgpu::contract::is_nvidia_gpu_uuid(inst.mig_uuid) ||
               vgpu::contract::is_amd_partition_uuid(inst.mig_uuid));
    // CUDA_VISIBLE_DEVICES is a comma list: a uuid holding ',' (or '=') would smuggle devices.
    FUZZ_CHECK(inst.mig_uuid.find_first_of(",= \n") == std::string::npos);
    if (!devices.empty()) devices += ',';
    devices += inst.mig_uuid;
  }
  const auto env = vgpu::contract::job_environment(*record);
  // One vendor per record: MIG instances and whole NVIDIA GPUs go to CUDA, AMD partitions to ROCr (and HIP ordinals).
  const bool amd = !record->instances.empty() && vgpu::contract::is_amd_partition_uuid(record->instances[0].mig_uuid);
  const bool described = !record->instances.empty() &&
                         std::ranges::all_of(record->instances, [](const auto& i) { return !i.model.empty(); });
  const bool shared = !record->mps_pipe_directory.empty();
  FUZZ_CHECK(env.size() == (amd ? 6u : 4u) + (described ? 3u : 0u) + (shared ? 1u : 0u));
  // The pipe directory becomes an environment value: absolute, one printable line.
  if (shared) {
    FUZZ_CHECK(record->mps_pipe_directory.front() == '/');
    FUZZ_CHECK(std::ranges::none_of(record->mps_pipe_directory,
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }));
    FUZZ_CHECK(std::ranges::count_if(env, [&](const auto& e) {
                 return e.name == "CUDA_MPS_PIPE_DIRECTORY" && e.value == record->mps_pipe_directory;
               }) == 1);
  }
  FUZZ_CHECK(env[0].name == (amd ? "ROCR_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES") && env[0].value == devices);
  FUZZ_CHECK(env[2].value == std::to_string(record->instances.size()));
  // VGPU_PLACEMENT: one item per instance, "<gpu>" or "<gpu>:<first>-<last>" with first <= last.
  FUZZ_CHECK(env[3].name == "VGPU_PLACEMENT");
  std::string expected;
  for (const auto& inst : record->instances) {
    if (!expected.empty()) expected += ',';
    expected += std::to_string(inst.gpu);
    if (inst.placement) {
      FUZZ_CHECK(inst.placement->size >= 1 && inst.placement->start + inst.placement->size <= 64);
      expected += ':' + std::to_string(inst.placement->start) + '-' +
                  std::to_string(inst.placement->start + inst.placement->size - 1);
    }
  }
  FUZZ_CHECK(env[3].value == expected);
  // What the writer writes, the reader reads back the same. The writer is only ever given what a
  // version 3 record holds (placement, model, memory, compute share); older records are only read.
  const bool complete = std::ranges::all_of(record->instances, [](const auto& i) {
    return i.placement.has_value() && !i.model.empty() && i.compute_slices > 0;
  });
  if (complete) {
    auto back = vgpu::contract::parse_job_record(vgpu::contract::render_job_record(*record), job_id);
    FUZZ_CHECK(back && *back == *record);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto doc = vgpu::contract::parse_strict_json(text);
  if (doc) FUZZ_CHECK(nlohmann::json::accept(text));

  // Once with a fixed node / job id, once with the ones the document names (so the fuzzer gets
  // past the "is this my file" checks without having to guess them).
  check_advertisement(text, "n1");
  check_job_record(text, 42);
  if (doc && doc->is_object()) {
    if (auto it = doc->find("node"); it != doc->end() && it->is_string())
      check_advertisement(text, it->get_ref<const std::string&>());
    if (auto it = doc->find("job_id");
        it != doc->end() && it->is_number_unsigned() && it->get<std::uint64_t>() <= UINT32_MAX)
      check_job_record(text, static_cast<vgpu::JobId>(it->get<std::uint64_t>()));
  }

  // SLURM_JOB_ID: strict decimal, so the value spells back to the text (less leading zeros).
  const std::string line(text.substr(0, text.find('\0')));
  if (auto id = vgpu::contract::parse_job_id(line.c_str()); id) {
    std::string_view digits = line;
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    FUZZ_CHECK(std::to_string(*id) == digits);
  }

  // slurmstepd's title: a job is read only from "slurmstepd: [<that job>" followed by its step.
  if (auto job = vgpu::contract::job_of_stepd_title(text); job) {
    const std::string spelled = "slurmstepd: [" + std::to_string(*job);
    FUZZ_CHECK(*job != 0 && text.starts_with(spelled) && text.size() > spelled.size() + 1);
    FUZZ_CHECK(text[spelled.size()] == '.' || text[spelled.size()] == '+');
  }

  // The node name from slurmd's command line (NUL-separated) or the host name: whatever is
  // accepted becomes a path component of the state directory.
  for (const vgpu::contract::NodeNameSources& sources :
       {vgpu::contract::NodeNameSources{nullptr, nullptr, text, "fallback.example"},
        vgpu::contract::NodeNameSources{nullptr, nullptr, {}, text},
        vgpu::contract::NodeNameSources{line.c_str(), nullptr, {}, "h"}}) {
    if (auto name = vgpu::contract::resolve_node_name(sources); name) {
      FUZZ_CHECK(vgpu::contract::is_valid_node_name(*name));
      FUZZ_CHECK(name->find('/') == std::string::npos && *name != "." && *name != "..");
    }
  }
  return 0;
}
