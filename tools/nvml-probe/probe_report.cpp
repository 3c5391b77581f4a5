#include "probe_report.h"

#include "probe_topology.h"

#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>

namespace vgpu::probe {
namespace {

using nlohmann::json;

json failure_json(const nvml::Failure& f) {
  return {{"call", f.call}, {"code", static_cast<int>(f.code)}, {"name", nvml::code_name(f.code)}, {"text", f.text}};
}

std::string mig_text(MigMode m) { return std::string(to_string(m)); }

json profile_json(const nvml::ProfileRead& r) {
  if (r.info_error) return {{"index", r.index}, {"error", failure_json(*r.info_error)}};
  const auto& i = *r.info;
  json j = {{"index", r.index},
            {"id", i.id},
            {"name", std::string(i.name)},
            {"slice_count", i.sliceCount},
            {"instance_count", i.instanceCount},
            {"multiprocessor_count", i.multiprocessorCount},
            {"memory_size_mib", i.memorySizeMB},
            {"copy_engine_count", i.copyEngineCount},
            {"decoder_count", i.decoderCount},
            {"encoder_count", i.encoderCount},
            {"jpeg_count", i.jpegCount},
            {"ofa_count", i.ofaCount},
            {"is_p2p_supported", i.isP2pSupported}};
  if (r.placements_error) {
    j["placements_error"] = failure_json(*r.placements_error);
  } else {
    json pls = json::array();
    for (const auto& p : r.placements) pls.push_back({{"start", p.start}, {"size", p.size}});
    j["placements"] = pls;
  }
  return j;
}

json catalog_check(nvml::Reader& reader, const GpuInfo& info) {
  json check;
  const GpuModel* builtin = Catalog::builtin().find_model_for_product(info.product_name);
  check["builtin_model"] = builtin ? json(builtin->name) : json(nullptr);
  auto device = reader.read_catalog(info.index);
  if (!device) {
    check["device_catalog_error"] = device.error().message;
    check["matches"] = false;
    return check;
  }
  check["device_profiles"] = device->profile_names();
  if (!builtin) {
    check["matches"] = false;
    check["differences"] = json::array({"no built-in model for " + info.product_name});
    return check;
  }
  auto diffs = compare_models(*builtin, *device);
  check["differences"] = diffs;
  check["matches"] = diffs.empty();
  return check;
}

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json optional_mib(const std::optional<std::uint64_t>& v) { return v ? json(*v / (1024 * 1024)) : json(nullptr); }

// Two activity samples `seconds` apart; the second one's readings, per GPU index.
std::map<int, json> activity_by_gpu(nvml::Reader& reader, double seconds, json& errors) {
  std::map<int, json> out;
  auto sampler = reader.activity_sampler();
  if (!sampler) return out;
  (void)sampler->sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  ActivitySample s = sampler->sample();
  for (const auto& e : s.errors) errors.push_back(e);
  for (const auto& r : s.readings) {
    json& g = out[r.gpu];
    if (g.is_null()) g = {{"interval_s", r.interval_seconds}, {"readings", json::array()}};
    g["readings"].push_back({{"gi_id", r.gi_id ? json(*r.gi_id) : json(nullptr)},
                             {"uuid", r.uuid},
                             {"sm_utilization", optional_json(r.sm_utilization)},
                             {"dram_bandwidth_utilization", optional_json(r.dram_bandwidth_utilization)},
                             {"memory_used_mib", optional_mib(r.memory_used_bytes)},
                             {"memory_total_mib", optional_mib(r.memory_total_bytes)}});
  }
  return out;
}

}  // namespace

json report(nvml::Reader& reader, const std::string& source, double gpm_seconds, const std::vector<int>& choose_whole) {
  json out = {{"format", "vgpu-nvml-probe"}, {"version", 1}, {"source", source}};
  json probe = {{"errors", json::array()}};
  json gpus = json::array();
  if (const auto& lib = reader.library()) probe["library"] = lib->path();
  if (auto why = reader.unavailable_reason(); !why.empty()) probe["unavailable"] = why;
  if (auto v = reader.driver_version()) out["driver_version"] = *v;
  else if (reader.library())
    probe["errors"].push_back(v.error().message);
  auto found = reader.discover();
  if (!found) probe["errors"].push_back(found.error().message);
  for (const auto& info : found.value_or(std::vector<GpuInfo>{})) {
    json g = {{"index", info.index},
              {"name", info.product_name},
              {"uuid", info.uuid},
              {"pci_bus_id", info.pci_bus_id},
              {"memory_mib", info.memory_mib},
              {"minor_number", info.minor},
              {"mig_mode", {{"current", mig_text(info.mig_current)}, {"pending", mig_text(info.mig_pending)}}}};
    if (auto dev = reader.device(info.index)) {
      nvmlPciInfo_t pci{};
      if (reader.api().device_get_pci_info(*dev, &pci) == NVML_SUCCESS) g["pci_device_id"] = pci.pciDeviceId;
    }
    json profiles = json::array();
    if (auto reads = reader.read_profiles(info.index)) {
      for (const auto& r : *reads) profiles.push_back(profile_json(r));
    } else {
      probe["errors"].push_back(reads.error().message);
    }
    g["gpu_instance_profiles"] = profiles;
    if (info.mig_current == MigMode::enabled) {
      json instances = json::array();
      if (auto list = reader.list_instances(info.index)) {
        for (const auto& i : *list)
          instances.push_back({{"gi_id", i.gi_id},
                               {"ci_id", i.ci_id ? json(*i.ci_id) : json(nullptr)},
                               {"profile_id", i.profile_id},
                               {"placement", {{"start", i.placement.start}, {"size", i.placement.size}}},
                               {"mig_uuid", i.mig_uuid}});
      } else {
        probe["errors"].push_back(list.error().message);
      }
      g["instances"] = instances;
    }
    g["catalog_check"] = catalog_check(reader, info);
    gpus.push_back(std::move(g));
  }
  auto topology = nvml::read_topology(reader, static_cast<int>(gpus.size()));
  for (const auto& f : topology.errors) probe["errors"].push_back(f.message());
  for (const auto& links : topology.gpus)
    if (auto j = nvlinks_json(links); !j.is_null()) gpus[static_cast<std::size_t>(links.gpu)]["nvlinks"] = j;
  out["topology"] = pairs_json(topology);
  if (!choose_whole.empty())
    out["whole_gpu_choices"] = whole_gpu_choices(topology, static_cast<int>(gpus.size()), choose_whole);
  if (gpm_seconds > 0) {
    auto activity = activity_by_gpu(reader, gpm_seconds, probe["errors"]);
    for (auto& g : gpus)
      if (auto it = activity.find(g["index"].get<int>()); it != activity.end()) g["gpm"] = it->second;
  }
  out["gpus"] = gpus;
  out["probe"] = probe;
  return out;
}

}  // namespace vgpu::probe
