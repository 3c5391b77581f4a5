#include "vgpu/core/catalog_json.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "vgpu/contract/strict_json.h"

namespace vgpu {

nlohmann::json to_json(const Profile& p) {
  nlohmann::json placements = nlohmann::json::array();
  for (const auto& pl : p.placements) placements.push_back({{"start", pl.start}, {"size", pl.size}});
  nlohmann::json out = {{"name", p.name},
                        {"nvml_profile_id", p.nvml_profile_id},
                        {"nvml_profile_index", p.nvml_profile_index},
                        {"compute_slices", p.compute_slices},
                        {"memory_slices", p.memory_slices},
                        {"sm_count", p.sm_count},
                        {"memory_mib", p.memory_mib},
                        {"max_instances", p.max_instances},
                        {"placements", placements}};
  if (p.whole_gpu) out["whole_gpu"] = true;
  return out;
}

nlohmann::json to_json(const GpuModel& m) {
  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& p : m.profiles) profiles.push_back(to_json(p));
  nlohmann::json out = {{"name", m.name},
                        {"nvml_names", m.nvml_names},
                        {"compute_slices", m.compute_slices},
                        {"memory_slices", m.memory_slices},
                        {"sm_count", m.sm_count},
                        {"memory_mib", m.memory_mib},
                        {"vendor", m.vendor},
                        {"partitioning", to_string(m.partitioning)},
                        {"profiles", profiles}};
  if (m.mig_switch_needs_reset) out["mig_switch_needs_reset"] = true;
  return out;
}

nlohmann::json catalog_to_json(std::span<const GpuModel> models) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : models) arr.push_back(to_json(m));
  return {{"models", arr}};
}

namespace {

struct Reader {
  const nlohmann::json& obj;
  std::string path;
  std::set<std::string> seen;

  Result<const nlohmann::json*> field(const std::string& key) {
    seen.insert(key);
    auto it = obj.find(key);
    if (it == obj.end())
      return fail(ErrorCode::corrupt, fmt::format("{}.{}: {}", path, key, contract::kMissingFieldMessage));
    return &*it;
  }
  Result<int> integer(const std::string& key, int lo, int hi) {
    auto f = field(key);
    if (!f) return std::unexpected(f.error());
    if (!(*f)->is_number_integer())
      return fail(ErrorCode::corrupt, fmt::format("{}.{}: must be an integer", path, key));
    auto v = (*f)->get<long long>();
    if (v < lo || v > hi)
      return fail(ErrorCode::corrupt, fmt::format("{}.{}: {} out of range [{}, {}]", path, key, v, lo, hi));
    return static_cast<int>(v);
  }
  Result<std::string> string(const std::string& key) {
    auto f = field(key);
    if (!f) return std::unexpected(f.error());
    if (!(*f)->is_string()) return fail(ErrorCode::corrupt, fmt::format("{}.{}: must be a string", path, key));
    return (*f)->get<std::string>();
  }
  // Called once every field was read: the fields read are the known ones.
  Result<void> no_unknown() const {
    for (const auto& [k, v] : obj.items())
      if (!seen.contains(k))
        return fail(ErrorCode::corrupt,
                    fmt::format("{}.{}: {}", path, contract::printable(k),
                                contract::unknown_field_message(std::vector<std::string>(seen.begin(), seen.end()))));
    return {};
  }
};

#define VGPU_TRY_ASSIGN(lhs, expr)                         \
  do {                                                     \
    auto vgpu_r_ = (expr);                                 \
    if (!vgpu_r_) return std::unexpected(vgpu_r_.error()); \
    lhs = std::move(*vgpu_r_);                             \
  } while (0)

Result<Profile> profile_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return fail(ErrorCode::corrupt, path + ": must be an object");
  Reader r{j, path, {}};
  Profile p;
  VGPU_TRY_ASSIGN(p.name, r.string("name"));
  if (auto ok = parse_profile_name(p.name); !ok) return fail(ErrorCode::corrupt, path + ".name: " + ok.error().message);
  VGPU_TRY_ASSIGN(p.nvml_profile_id, r.integer("nvml_profile_id", 0, 1000));
  VGPU_TRY_ASSIGN(p.nvml_profile_index, r.integer("nvml_profile_index", 0, 1000));
  VGPU_TRY_ASSIGN(p.compute_slices, r.integer("compute_slices", 1, 8));
  VGPU_TRY_ASSIGN(p.memory_slices, r.integer("memory_slices", 1, 8));
  VGPU_TRY_ASSIGN(p.sm_count, r.integer("sm_count", 0, 100000));
  VGPU_TRY_ASSIGN(p.memory_mib, r.integer("memory_mib", 0, 1 << 24));
  VGPU_TRY_ASSIGN(p.max_instances, r.integer("max_instances", 0, 64));
  const nlohmann::json* pls = nullptr;
  VGPU_TRY_ASSIGN(pls, r.field("placements"));
  if (!pls->is_array()) return fail(ErrorCode::corrupt, path + ".placements: must be an array");
  for (std::size_t i = 0; i < pls->size(); ++i) {
    std::string ppath = fmt::format("{}.placements[{}]", path, i);
    if (!(*pls)[i].is_object()) return fail(ErrorCode::corrupt, ppath + ": must be an object");
    Reader pr{(*pls)[i], ppath, {}};
    Placement pl;
    VGPU_TRY_ASSIGN(pl.start, pr.integer("start", 0, 7));
    VGPU_TRY_ASSIGN(pl.size, pr.integer("size", 1, 8));
    if (pl.end() > 8) return fail(ErrorCode::corrupt, ppath + ": extends past slice 8");
    if (auto u = pr.no_unknown(); !u) return std::unexpected(u.error());
    p.placements.push_back(pl);
  }
  if (j.contains("whole_gpu")) {
    const nlohmann::json* whole = nullptr;
    VGPU_TRY_ASSIGN(whole, r.field("whole_gpu"));
    if (!whole->is_boolean()) return fail(ErrorCode::corrupt, path + ".whole_gpu: must be true or false");
    p.whole_gpu = whole->get<bool>();
  }
  if (p.whole_gpu != p.name.starts_with("whole."))
    return fail(ErrorCode::corrupt, fmt::format("{}.whole_gpu: a profile is the whole GPU exactly when its name is "
                                                "whole.<M>gb ('{}')",
                                                path, p.name));
  if (auto u = r.no_unknown(); !u) return std::unexpected(u.error());
  return p;
}

}  // namespace

Result<GpuModel> model_from_json(const nlohmann::json& j, std::string_view where) {
  std::string path(where);
  if (!j.is_object()) return fail(ErrorCode::corrupt, path + ": must be an object");
  Reader r{j, path, {}};
  GpuModel m;
  VGPU_TRY_ASSIGN(m.name, r.string("name"));
  const nlohmann::json* names = nullptr;
  VGPU_TRY_ASSIGN(names, r.field("nvml_names"));
  if (!names->is_array()) return fail(ErrorCode::corrupt, path + ".nvml_names: must be an array");
  for (const auto& n : *names) {
    if (!n.is_string()) return fail(ErrorCode::corrupt, path + ".nvml_names: strings only");
    m.nvml_names.push_back(n.get<std::string>());
  }
  VGPU_TRY_ASSIGN(m.compute_slices, r.integer("compute_slices", 1, 8));
  VGPU_TRY_ASSIGN(m.memory_slices, r.integer("memory_slices", 1, 8));
  VGPU_TRY_ASSIGN(m.sm_count, r.integer("sm_count", 0, 100000));
  VGPU_TRY_ASSIGN(m.memory_mib, r.integer("memory_mib", 0, 1 << 24));
  VGPU_TRY_ASSIGN(m.vendor, r.string("vendor"));
  if (m.vendor != "nvidia" && m.vendor != "amd")
    return fail(ErrorCode::corrupt,
                fmt::format("{}.vendor: '{}': expected nvidia or amd", path, contract::printable(m.vendor)));
  std::string partitioning;
  VGPU_TRY_ASSIGN(partitioning, r.string("partitioning"));
  if (partitioning == "uniform") m.partitioning = Partitioning::uniform;
  else if (partitioning == "none")
    m.partitioning = Partitioning::none;
  else if (partitioning != "mig")
    return fail(ErrorCode::corrupt, fmt::format("{}.partitioning: '{}': expected mig, uniform or none", path,
                                                contract::printable(partitioning)));
  if (j.contains("mig_switch_needs_reset")) {
    const nlohmann::json* reset = nullptr;
    VGPU_TRY_ASSIGN(reset, r.field("mig_switch_needs_reset"));
    if (!reset->is_boolean()) return fail(ErrorCode::corrupt, path + ".mig_switch_needs_reset: must be true or false");
    m.mig_switch_needs_reset = reset->get<bool>();
  }
  const nlohmann::json* profiles = nullptr;
  VGPU_TRY_ASSIGN(profiles, r.field("profiles"));
  if (!profiles->is_array()) return fail(ErrorCode::corrupt, path + ".profiles: must be an array");
  for (std::size_t i = 0; i < profiles->size(); ++i) {
    auto p = profile_from_json((*profiles)[i], fmt::format("{}.profiles[{}]", path, i));
    if (!p) return std::unexpected(p.error());
    m.profiles.push_back(std::move(*p));
  }
  if (auto u = r.no_unknown(); !u) return std::unexpected(u.error());
  return m;
}

}  // namespace vgpu
