#include "vgpu/core/catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "catalog_tables.h"
#include "vgpu/core/shared_instance.h"

namespace vgpu {

const Profile* GpuModel::find_profile(std::string_view profile_name) const {
  auto it = std::ranges::find(profiles, profile_name, &Profile::name);
  return it == profiles.end() ? nullptr : &*it;
}

const Profile* GpuModel::find_profile_by_nvml_id(int nvml_profile_id) const {
  auto it = std::ranges::find(profiles, nvml_profile_id, &Profile::nvml_profile_id);
  return it == profiles.end() ? nullptr : &*it;
}

const Profile* GpuModel::whole_gpu_profile() const {
  auto it = std::ranges::find(profiles, true, &Profile::whole_gpu);
  return it == profiles.end() ? nullptr : &*it;
}

std::string GpuModel::profile_names() const {
  std::vector<std::string_view> names;
  for (const auto& p : profiles) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

namespace {
Catalog& installed() {
  static Catalog catalog(detail::builtin_models());
  return catalog;
}

// The memory a profile's name states: "1g.10gb" -> 10, "cpx.24gb" -> 24.
int named_memory_gb(std::string_view name) {
  auto dot = name.find('.');
  auto gb = name.find("gb", dot);
  if (dot == std::string_view::npos || gb == std::string_view::npos) return 0;
  int v = 0;
  for (char c : name.substr(dot + 1, gb - dot - 1)) v = v * 10 + (c - '0');
  return v;
}
}  // namespace

const Catalog& Catalog::builtin() { return installed(); }

void Catalog::install_classes(std::vector<GpuClass> classes) {
  installed() = with_classes(Catalog(detail::builtin_models()), classes);
}

Catalog Catalog::with_classes(const Catalog& base, std::span<const GpuClass> classes) {
  std::vector<GpuModel> models(base.models().begin(), base.models().end());
  for (auto& m : models) {
    std::erase_if(m.profiles, [](const Profile& p) { return !p.realizes.empty(); });
    std::vector<Profile> aliases;
    for (const auto& c : classes)
      if (const Profile* p = realize(m, c)) {
        Profile alias = *p;
        alias.name = c.name;
        alias.realizes = p->name;
        alias.shares = c.shares;
        aliases.push_back(std::move(alias));
      }
    // After the hardware profiles, so a lookup by hardware id finds the hardware profile.
    for (auto& a : aliases) m.profiles.push_back(std::move(a));
  }
  return Catalog(std::move(models));
}

namespace {
const Profile* hardware_profile_for(const GpuModel& model, const GpuClass& gpu_class) {
  if (!gpu_class.profile.empty()) {
    const Profile* p = model.find_profile(gpu_class.profile);
    return p && p->realizes.empty() ? p : nullptr;
  }
  const Profile* best = nullptr;
  for (const auto& p : model.profiles) {
    // A class is a size of MIG instance: the whole GPU (MIG off) is asked for by its own name.
    if (!p.realizes.empty() || p.whole_gpu || p.name.find('+') != std::string::npos) continue;
    const double share = static_cast<double>(p.compute_slices) / model.compute_slices;
    if (named_memory_gb(p.name) < gpu_class.min_memory_gb || share + 1e-9 < gpu_class.min_compute_fraction) continue;
    if (!best || std::pair(p.compute_slices, p.memory_mib) < std::pair(best->compute_slices, best->memory_mib))
      best = &p;
  }
  return best;
}
}  // namespace

const Profile* realize(const GpuModel& model, const GpuClass& gpu_class) {
  const Profile* p = hardware_profile_for(model, gpu_class);
  if (p && gpu_class.shares > 0 && !share_limits(*p, gpu_class.shares)) return nullptr;
  return p;
}

const GpuModel* Catalog::find_model(std::string_view name) const {
  auto it = std::ranges::find(models_, name, &GpuModel::name);
  return it == models_.end() ? nullptr : &*it;
}

const GpuModel* Catalog::find_model_for_product(std::string_view product) const {
  if (const auto* m = find_model(product)) return m;
  for (const auto& m : models_)
    if (std::ranges::find(m.nvml_names, product) != m.nvml_names.end()) return &m;
  return nullptr;
}

std::string Catalog::model_names() const {
  std::vector<std::string_view> names;
  for (const auto& m : models_) names.push_back(m.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

Result<const GpuModel*> Catalog::require_model(std::string_view name) const {
  if (const auto* m = find_model_for_product(name)) return m;
  return fail(ErrorCode::not_found, fmt::format("GPU model {}: not a model we know (known: {})", name, model_names()));
}

Result<const Profile*> Catalog::require_profile(const GpuModel& model, std::string_view profile_name) const {
  if (const auto* p = model.find_profile(profile_name)) return p;
  return fail(ErrorCode::not_found, fmt::format("profile {}: unknown profile on {} (valid: {})", profile_name,
                                                model.name, model.profile_names()));
}

std::vector<std::string> compare_models(const GpuModel& expected, const GpuModel& actual) {
  std::vector<std::string> diffs;
  auto field = [&](std::string_view where, std::string_view name, auto a, auto b) {
    if (a != b) diffs.push_back(fmt::format("{}: {} {} != {}", where, name, a, b));
  };
  field(expected.name, "compute_slices", expected.compute_slices, actual.compute_slices);
  field(expected.name, "memory_slices", expected.memory_slices, actual.memory_slices);
  for (const auto& e : expected.profiles) {
    if (!e.realizes.empty()) continue;  // a class: not the device's to report
    if (e.whole_gpu) continue;          // NVML lists MIG profiles only
    const Profile* a = actual.find_profile(e.name);
    if (!a) {
      diffs.push_back(fmt::format("{}: missing on the device", e.name));
      continue;
    }
    field(e.name, "nvml_profile_id", e.nvml_profile_id, a->nvml_profile_id);
    field(e.name, "compute_slices", e.compute_slices, a->compute_slices);
    field(e.name, "memory_slices", e.memory_slices, a->memory_slices);
    field(e.name, "sm_count", e.sm_count, a->sm_count);
    field(e.name, "memory_mib", e.memory_mib, a->memory_mib);
    field(e.name, "max_instances", e.max_instances, a->max_instances);
    if (e.placements != a->placements) {
      auto show = [](const std::vector<Placement>& ps) {
        std::string s;
        for (const auto& p : ps) s += fmt::format("{{{},{}}}", p.start, p.size);
        return s;
      };
      diffs.push_back(fmt::format("{}: placements {} != {}", e.name, show(e.placements), show(a->placements)));
    }
  }
  for (const auto& a : actual.profiles)
    if (a.realizes.empty() && !expected.find_profile(a.name))
      diffs.push_back(fmt::format("{}: on the device but not in the built-in table", a.name));
  return diffs;
}

std::string_view to_string(Partitioning p) {
  switch (p) {
    case Partitioning::mig: return "mig";
    case Partitioning::uniform: return "uniform";
    case Partitioning::none: return "none";
  }
  return "mig";
}

Result<std::string> parse_profile_name(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("profile '{}': {} (expected <N>g.<M>gb, <mode>.<M>gb or whole.<M>gb, e.g. "
                            "3g.40gb, 1g.10gb+me, cpx.24gb or whole.80gb)",
                            text, why));
  };
  if (text.empty()) return bad("empty");
  if (text.size() > 32) return bad("too long");
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  // An AMD compute-partition mode and the memory each partition has ("cpx.24gb"), or a whole GPU.
  for (std::string_view mode : {"spx.", "dpx.", "tpx.", "qpx.", "cpx.", "whole."}) {
    if (!text.starts_with(mode)) continue;
    i = mode.size();
    std::size_t m = digits();
    if (m == 0 || m > 4 || text[mode.size()] == '0') return bad("missing memory size");
    if (text.substr(i) != "gb") return bad("memory size must end in 'gb'");
    return std::string(text);
  }
  std::size_t n = digits();
  if (n == 0 || n > 2 || text[0] == '0') return bad("must start with a compute slice count");
  if (text.substr(i, 2) != "g.") return bad("missing 'g.' after the compute slice count");
  i += 2;
  std::size_t m = digits();
  if (m == 0 || m > 4) return bad("missing memory size");
  if (text.substr(i, 2) != "gb") return bad("memory size must end in 'gb'");
  i += 2;
  std::string_view rest = text.substr(i);
  if (!rest.empty() && rest != "+me" && rest != "+gfx") return bad("unknown suffix");
  return std::string(text);
}

}  // namespace vgpu
