#include <fmt/format.h>

#include "packer.h"

namespace vgpu::bench {

std::string_view policy_name(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::whole: return "whole";
    case PolicyKind::static_mig: return "static";
    case PolicyKind::firstfit: return "firstfit";
    case PolicyKind::planner: return "planner";
    case PolicyKind::shared: return "shared";
  }
  return "?";
}

Result<PolicyKind> parse_policy(std::string_view name) {
  for (auto k : {PolicyKind::whole, PolicyKind::static_mig, PolicyKind::firstfit,
                 PolicyKind::planner, PolicyKind::shared})
    if (policy_name(k) == name) return k;
  return fail(ErrorCode::invalid_argument,
              fmt::format("policy '{}': unknown (whole, static, firstfit, planner, shared)", name));
}

}  // namespace vgpu::bench
