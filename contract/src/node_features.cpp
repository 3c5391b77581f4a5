#include "vgpu/contract/node_features.h"

#include <algorithm>

namespace vgpu::contract {

std::vector<std::string> parse_feature_list(std::string_view shown) {
  std::vector<std::string> out;
  if (shown == "(null)") return out;
  std::size_t start = 0;
  while (start <= shown.size()) {
    std::size_t comma = shown.find(',', start);
    if (comma == std::string_view::npos) comma = shown.size();
    if (comma > start) out.emplace_back(shown.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

PlannerFeatures planner_features_in(const std::vector<std::string>& current) {
  auto has = [&](std::string_view f) { return std::ranges::find(current, f) != current.end(); };
  return {has(kFeatureInUse), has(kFeatureNoIdleGpu), has(kFeaturePartlyUsedGpu)};
}

std::string with_planner_features(const std::vector<std::string>& current, const PlannerFeatures& set) {
  std::string out;
  auto add = [&out](std::string_view f) {
    if (!out.empty()) out += ',';
    out += f;
  };
  for (const auto& f : current)
    if (f != kFeatureInUse && f != kFeatureNoIdleGpu && f != kFeaturePartlyUsedGpu) add(f);
  if (set.in_use) add(kFeatureInUse);
  if (set.no_idle_gpu) add(kFeatureNoIdleGpu);
  if (set.partly_used_gpu) add(kFeaturePartlyUsedGpu);
  return out;
}

}  // namespace vgpu::contract
