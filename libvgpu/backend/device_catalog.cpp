#include <fmt/format.h>

#include <algorithm>

#include "vgpu/backend/backend_catalog.h"

namespace vgpu {

std::string profile_name_from_device(std::string_view reported) {
  constexpr std::string_view prefix = "MIG ";
  if (reported.starts_with(prefix)) reported.remove_prefix(prefix.size());
  return std::string(reported);
}

Result<GpuModel> model_from_device(const std::string& product_name, int memory_mib,
                                   const std::vector<DeviceProfile>& profiles) {
  auto where = fmt::format("device {}", product_name);
  if (profiles.empty()) return fail(ErrorCode::not_found, where + ": the device reported no MIG profiles");
  GpuModel model;
  const GpuModel* known = Catalog::builtin().find_model_for_product(product_name);
  model.name = known ? known->name : product_name;
  model.nvml_names = {product_name};
  model.memory_mib = memory_mib;
  for (const auto& d : profiles) {
    auto name = parse_profile_name(profile_name_from_device(d.name));
    if (!name) return std::unexpected(name.error().within(fmt::format("{}: profile id {}", where, d.id)));
    if (d.placements.empty())
      return fail(ErrorCode::corrupt, fmt::format("{}: profile {}: no possible placements reported", where, *name));
    Profile p;
    p.name = *name;
    p.nvml_profile_id = d.id;
    p.nvml_profile_index = d.index;
    p.compute_slices = d.compute_slices;
    p.memory_slices = d.placements.front().size;
    for (const auto& pl : d.placements)
      if (pl.size != p.memory_slices)
        return fail(ErrorCode::corrupt, fmt::format("{}: profile {}: placements of different sizes ({} and {})", where,
                                                    *name, p.memory_slices, pl.size));
    p.sm_count = d.sm_count;
    p.memory_mib = d.memory_mib;
    p.max_instances = d.instance_count;
    p.placements = d.placements;
    std::ranges::sort(p.placements);
    model.compute_slices = std::max(model.compute_slices, d.compute_slices);
    for (const auto& pl : p.placements) model.memory_slices = std::max(model.memory_slices, pl.end());
    model.sm_count = std::max(model.sm_count, d.sm_count);
    model.profiles.push_back(std::move(p));
  }
  return model;
}

}  // namespace vgpu
