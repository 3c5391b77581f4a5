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
    case PolicyKind::planner_weighted: return "planner+weights";
    case PolicyKind::shared_weighted: return "shared+weights";
    case PolicyKind::planner_preferring: return "planner+prefer";
    case PolicyKind::shared_preferring: return "shared+prefer";
    case PolicyKind::planner_filling: return "planner+fill";
    case PolicyKind::shared_filling: return "shared+fill";
    case PolicyKind::planner_preferring_filling: return "planner+prefer+fill";
    case PolicyKind::shared_preferring_filling: return "shared+prefer+fill";
    case PolicyKind::fgd_twin: return "fgd-twin";
    case PolicyKind::bestfit_twin: return "bestfit-twin";
    case PolicyKind::fgd_mig: return "fgd-mig";
    case PolicyKind::planner_on_demand: return "planner+ondemand";
    case PolicyKind::shared_on_demand: return "shared+ondemand";
  }
  return "?";
}

bool reshapes_nodes(PolicyKind kind) {
  return kind != PolicyKind::whole && kind != PolicyKind::static_mig && kind != PolicyKind::fgd_twin &&
         kind != PolicyKind::bestfit_twin;
}

bool grants_shares(PolicyKind kind) {
  return kind == PolicyKind::shared || kind == PolicyKind::shared_weighted || kind == PolicyKind::shared_preferring ||
         kind == PolicyKind::shared_filling || kind == PolicyKind::shared_preferring_filling ||
         kind == PolicyKind::fgd_twin || kind == PolicyKind::bestfit_twin || kind == PolicyKind::shared_on_demand;
}

Result<PolicyKind> parse_policy(std::string_view name) {
  for (auto k :
       {PolicyKind::whole, PolicyKind::static_mig, PolicyKind::firstfit, PolicyKind::planner, PolicyKind::shared,
        PolicyKind::planner_weighted, PolicyKind::shared_weighted, PolicyKind::planner_preferring,
        PolicyKind::shared_preferring, PolicyKind::planner_filling, PolicyKind::shared_filling,
        PolicyKind::planner_preferring_filling, PolicyKind::shared_preferring_filling, PolicyKind::fgd_twin,
        PolicyKind::bestfit_twin, PolicyKind::fgd_mig, PolicyKind::planner_on_demand, PolicyKind::shared_on_demand})
    if (policy_name(k) == name) return k;
  return fail(ErrorCode::invalid_argument,
              fmt::format("policy '{}': unknown (whole, static, firstfit, planner, shared, "
                          "planner+weights, shared+weights, planner+prefer, shared+prefer, planner+fill, shared+fill, "
                          "planner+prefer+fill, "
                          "shared+prefer+fill, fgd-twin, bestfit-twin, fgd-mig, planner+ondemand, shared+ondemand)",
                          name));
}

}  // namespace vgpu::bench
