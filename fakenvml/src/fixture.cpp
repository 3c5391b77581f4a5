#include "fixture.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nvml_topology_names.h"
#include "vgpu/contract/strict_json.h"

namespace fakenvml {
namespace {

using nlohmann::json;

struct BadFixture : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void bad(const std::string& where, const std::string& why) { throw BadFixture(where + ": " + why); }

void only_keys(const json& j, const std::string& where, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) bad(where, "expected an object");
  auto problems = vgpu::contract::key_problems(j, {}, allowed);
  if (!problems.empty()) bad(where + "." + vgpu::contract::printable(problems.front().key), problems.front().message);
}

const json& need(const json& j, const std::string& where, const char* key) {
  if (!j.contains(key)) bad(where + "." + key, std::string(vgpu::contract::kMissingFieldMessage));
  return j.at(key);
}

unsigned long long uint_at(const json& j, const std::string& where, const char* key) {
  const json& v = need(j, where, key);
  if (!v.is_number_unsigned()) bad(where + "." + key, "expected a non-negative integer");
  return v.get<unsigned long long>();
}

unsigned u32_at(const json& j, const std::string& where, const char* key) {
  auto v = uint_at(j, where, key);
  if (v > 0xffffffffULL) bad(where + "." + key, "out of range");
  return static_cast<unsigned>(v);
}

unsigned u32_or(const json& j, const std::string& where, const char* key, unsigned dflt) {
  return j.contains(key) ? u32_at(j, where, key) : dflt;
}

std::string str_at(const json& j, const std::string& where, const char* key) {
  const json& v = need(j, where, key);
  if (!v.is_string()) bad(where + "." + key, "expected a string");
  return v.get<std::string>();
}

RecordedError error_at(const json& j, const std::string& where) {
  only_keys(j, where, {"call", "code", "name", "text"});
  auto code = u32_at(j, where, "code");
  if (code == 0) bad(where + ".code", "a recorded error cannot be NVML_SUCCESS");
  return RecordedError{static_cast<nvmlReturn_t>(code)};
}

Mig mig_at(const json& j, const std::string& where, const char* key) {
  auto s = str_at(j, where, key);
  if (s == "disabled") return Mig::disabled;
  if (s == "enabled") return Mig::enabled;
  if (s == "unsupported") return Mig::unsupported;
  bad(where + "." + key, "expected disabled, enabled or unsupported, got '" + s + "'");
}

GiProfile gi_profile_at(const json& j, const std::string& where) {
  GiProfile p;
  if (j.contains("error")) {
    only_keys(j, where, {"index", "error"});
    p.index = u32_at(j, where, "index");
    p.error = error_at(j.at("error"), where + ".error");
    return p;
  }
  only_keys(j, where,
            {"index", "id", "name", "slice_count", "instance_count", "multiprocessor_count", "memory_size_mib",
             "copy_engine_count", "decoder_count", "encoder_count", "jpeg_count", "ofa_count", "is_p2p_supported",
             "placements", "placements_error"});
  p.index = u32_at(j, where, "index");
  p.id = u32_at(j, where, "id");
  p.name = str_at(j, where, "name");
  p.slice_count = u32_at(j, where, "slice_count");
  p.instance_count = u32_at(j, where, "instance_count");
  p.multiprocessor_count = u32_at(j, where, "multiprocessor_count");
  p.memory_size_mib = uint_at(j, where, "memory_size_mib");
  p.copy_engine_count = u32_or(j, where, "copy_engine_count", 0);
  p.decoder_count = u32_or(j, where, "decoder_count", 0);
  p.encoder_count = u32_or(j, where, "encoder_count", 0);
  p.jpeg_count = u32_or(j, where, "jpeg_count", 0);
  p.ofa_count = u32_or(j, where, "ofa_count", 0);
  p.is_p2p_supported = u32_or(j, where, "is_p2p_supported", 0);
  if (j.contains("placements_error")) {
    p.placements_error = error_at(j.at("placements_error"), where + ".placements_error");
  } else {
    const json& pls = need(j, where, "placements");
    if (!pls.is_array() || pls.empty()) bad(where + ".placements", "expected a non-empty array");
    for (std::size_t i = 0; i < pls.size(); ++i) {
      auto w = where + ".placements[" + std::to_string(i) + "]";
      only_keys(pls[i], w, {"start", "size"});
      nvmlGpuInstancePlacement_t pl{u32_at(pls[i], w, "start"), u32_at(pls[i], w, "size")};
      if (pl.size == 0 || pl.start >= 32 || pl.size > 32 - pl.start) bad(w, "placement out of range");
      p.placements.push_back(pl);
    }
  }
  return p;
}

// The CI profile index NVML uses for a compute instance of `slices` compute slices.
std::optional<unsigned> ci_index_for_slices(unsigned slices) {
  switch (slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 7: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    case 8: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    default: return std::nullopt;
  }
}

}  // namespace

bool gpm_supported_by_name(const std::string& product_name) {
  // Hopper (H100, H200, H800, H20, GH200) and Blackwell (B100, B200, GB200) parts.
  for (const char* part : {"H100", "H200", "H800", "H20", "B100", "B200"})
    if (product_name.find(part) != std::string::npos) return true;
  return false;
}

namespace {

std::vector<NvLink> nvlinks_at(const json& links, const std::string& where) {
  if (!links.is_array()) bad(where, "expected an array");
  std::vector<NvLink> out;
  for (std::size_t i = 0; i < links.size(); ++i) {
    auto w = where + "[" + std::to_string(i) + "]";
    only_keys(links[i], w, {"link", "active", "remote_pci_bus_id"});
    NvLink l;
    l.link = u32_at(links[i], w, "link");
    if (l.link >= NVML_NVLINK_MAX_LINKS) bad(w + ".link", "beyond NVML_NVLINK_MAX_LINKS");
    const json& active = need(links[i], w, "active");
    if (!active.is_boolean()) bad(w + ".active", "expected true or false");
    l.active = active.get<bool>();
    if (links[i].contains("remote_pci_bus_id") && !links[i].at("remote_pci_bus_id").is_null())
      l.remote_pci_bus_id = str_at(links[i], w, "remote_pci_bus_id");
    out.push_back(std::move(l));
  }
  return out;
}

template <class Table>
std::optional<decltype(Table{}[0].first)> named_at(const json& j, const std::string& where, const char* key,
                                                   const Table& table) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  auto name = str_at(j, where, key);
  auto value = vgpu::nvml::value_in(table, name);
  if (!value) bad(where + "." + key, "unknown value '" + name + "'");
  return value;
}

std::vector<GpuPairTopology> pairs_at(const json& topology, const std::string& where, std::size_t gpu_count) {
  only_keys(topology, where, {"pairs"});
  const json& pairs = need(topology, where, "pairs");
  if (!pairs.is_array()) bad(where + ".pairs", "expected an array");
  std::vector<GpuPairTopology> out;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    auto w = where + ".pairs[" + std::to_string(i) + "]";
    only_keys(pairs[i], w, {"gpus", "common_ancestor", "p2p_nvlink", "p2p_read"});
    const json& gpus = need(pairs[i], w, "gpus");
    if (!gpus.is_array() || gpus.size() != 2 || !gpus[0].is_number_unsigned() || !gpus[1].is_number_unsigned())
      bad(w + ".gpus", "expected two GPU indexes");
    GpuPairTopology p;
    p.a = gpus[0].get<unsigned>();
    p.b = gpus[1].get<unsigned>();
    if (p.a == p.b || p.a >= gpu_count || p.b >= gpu_count) bad(w + ".gpus", "expected two different GPUs of the node");
    p.common_ancestor = named_at(pairs[i], w, "common_ancestor", vgpu::nvml::kTopologyLevelNames);
    p.p2p_nvlink = named_at(pairs[i], w, "p2p_nvlink", vgpu::nvml::kP2pStatusNames);
    p.p2p_read = named_at(pairs[i], w, "p2p_read", vgpu::nvml::kP2pStatusNames);
    out.push_back(p);
  }
  return out;
}

Gpu gpu_at(const json& j, const std::string& where) {
  only_keys(j, where,
            {"index", "name", "uuid", "pci_bus_id", "pci_device_id", "memory_mib", "minor_number", "mig_mode",
             "gpu_instance_profiles", "compute_instance_profiles", "nvlinks",
             /* probe report keys, not replayed */ "catalog_check", "instances", "notes", "gpm"});
  Gpu g;
  g.name = str_at(j, where, "name");
  g.uuid = str_at(j, where, "uuid");
  g.pci_bus_id = str_at(j, where, "pci_bus_id");
  g.pci_device_id = u32_or(j, where, "pci_device_id", 0);
  g.memory_mib = uint_at(j, where, "memory_mib");
  g.minor = u32_at(j, where, "minor_number");
  g.gpm_supported = gpm_supported_by_name(g.name);
  if (j.contains("nvlinks")) g.nvlinks = nvlinks_at(j.at("nvlinks"), where + ".nvlinks");
  const json& mig = need(j, where, "mig_mode");
  only_keys(mig, where + ".mig_mode", {"current", "pending"});
  g.mig_current = mig_at(mig, where + ".mig_mode", "current");
  g.mig_pending = mig_at(mig, where + ".mig_mode", "pending");
  std::set<unsigned> indices, ids;
  if (j.contains("gpu_instance_profiles")) {
    const json& ps = j.at("gpu_instance_profiles");
    if (!ps.is_array()) bad(where + ".gpu_instance_profiles", "expected an array");
    for (std::size_t i = 0; i < ps.size(); ++i) {
      auto w = where + ".gpu_instance_profiles[" + std::to_string(i) + "]";
      auto p = gi_profile_at(ps[i], w);
      if (p.index >= NVML_GPU_INSTANCE_PROFILE_COUNT) bad(w + ".index", "beyond NVML_GPU_INSTANCE_PROFILE_COUNT");
      if (!indices.insert(p.index).second) bad(w + ".index", "duplicate profile index");
      if (!p.error && !ids.insert(p.id).second) bad(w + ".id", "duplicate profile id");
      if (!p.error) {
        g.compute_slices = std::max(g.compute_slices, p.slice_count);
        for (auto pl : p.placements) g.memory_slices = std::max(g.memory_slices, pl.start + pl.size);
      }
      g.gi_profiles.push_back(std::move(p));
    }
  }
  if (g.mig_current == Mig::unsupported &&
      std::any_of(g.gi_profiles.begin(), g.gi_profiles.end(), [](const GiProfile& p) { return !p.error; }))
    bad(where, "a GPU without MIG support cannot list GPU-instance profiles");
  if (j.contains("compute_instance_profiles")) {
    const json& cs = j.at("compute_instance_profiles");
    if (!cs.is_array()) bad(where + ".compute_instance_profiles", "expected an array");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      auto w = where + ".compute_instance_profiles[" + std::to_string(i) + "]";
      only_keys(cs[i], w, {"index", "id", "slice_count", "multiprocessor_count"});
      CiProfile c{u32_at(cs[i], w, "index"), u32_at(cs[i], w, "id"), u32_at(cs[i], w, "slice_count"),
                  u32_at(cs[i], w, "multiprocessor_count")};
      if (c.index >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        bad(w + ".index", "beyond NVML_COMPUTE_INSTANCE_PROFILE_COUNT");
      g.ci_profiles.push_back(c);
    }
  } else {
    // A recording from a GPU with MIG disabled cannot list CI profiles (they need a GPU instance),
    // so offer one CI profile per GI slice count, with the id equal to the index as NVML does.
    for (const auto& p : g.gi_profiles) {
      if (p.error) continue;
      auto idx = ci_index_for_slices(p.slice_count);
      if (!idx) bad(where, "no compute-instance profile for " + std::to_string(p.slice_count) + " slices");
      bool have =
          std::any_of(g.ci_profiles.begin(), g.ci_profiles.end(), [&](const CiProfile& c) { return c.index == *idx; });
      if (!have) g.ci_profiles.push_back({*idx, *idx, p.slice_count, p.multiprocessor_count});
    }
  }
  return g;
}

}  // namespace

std::optional<Fixture> load_fixture(const std::string& path, std::string& error) {
  try {
    std::ifstream in(path);
    if (!in) bad(path, "cannot open");
    json j;
    try {
      j = json::parse(in);
    } catch (const json::parse_error& e) {
      bad(path, e.what());
    }
    only_keys(j, path,
              {"format", "version", "source", "driver_version", "gpus", "topology", "probe",
               /* a probe report key, not replayed */ "whole_gpu_choices"});
    auto format = str_at(j, path, "format");
    if (format != "vgpu-nvml-fixture" && format != "vgpu-nvml-probe")
      bad(path + ".format", "expected vgpu-nvml-fixture or vgpu-nvml-probe, got '" + format + "'");
    if (uint_at(j, path, "version") != 1) bad(path + ".version", "only version 1 is understood");
    Fixture f;
    f.driver_version = j.contains("driver_version") ? str_at(j, path, "driver_version") : "fake";
    const json& gpus = need(j, path, "gpus");
    if (!gpus.is_array()) bad(path + ".gpus", "expected an array");
    std::set<std::string> uuids;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      auto w = path + ".gpus[" + std::to_string(i) + "]";
      auto g = gpu_at(gpus[i], w);
      if (u32_at(gpus[i], w, "index") != i) bad(w + ".index", "GPUs must be listed in index order");
      if (!uuids.insert(g.uuid).second) bad(w + ".uuid", "duplicate uuid");
      f.gpus.push_back(std::move(g));
    }
    if (j.contains("topology")) f.pairs = pairs_at(j.at("topology"), path + ".topology", f.gpus.size());
    return f;
  } catch (const BadFixture& e) {
    error = e.what();
  } catch (const nlohmann::json::exception& e) {
    error = path + ": " + e.what();
  }
  return std::nullopt;
}

}  // namespace fakenvml
