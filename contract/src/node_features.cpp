#include "vgpu/contract/node_features.h"

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

std::string with_planner_features(const std::vector<std::string>& current, bool in_use,
                                  bool no_idle_gpu) {
  std::string out;
  auto add = [&out](std::string_view f) {
    if (!out.empty()) out += ',';
    out += f;
  };
  for (const auto& f : current)
    if (f != kFeatureInUse && f != kFeatureNoIdleGpu) add(f);
  if (in_use) add(kFeatureInUse);
  if (no_idle_gpu) add(kFeatureNoIdleGpu);
  return out;
}

}  // namespace vgpu::contract
