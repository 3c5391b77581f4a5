// JSON form of the catalog, shared by `vgpuctl catalog --json`, the NVML probe and fixture tools.
#pragma once

#include <nlohmann/json.hpp>

#include "vgpu/core/catalog.h"

namespace vgpu {

nlohmann::json to_json(const Profile& profile);
nlohmann::json to_json(const GpuModel& model);
// {"models": [...]} for the given models.
nlohmann::json catalog_to_json(std::span<const GpuModel> models);

// Strict inverse of to_json(GpuModel): every field required, no unknown fields; the error names the path.
Result<GpuModel> model_from_json(const nlohmann::json& j, std::string_view where);

}  // namespace vgpu
