// A loaded policy, rendered for humans (vgpuctl policy check) and as JSON for scripts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "policy_reader.h"
#include "vgpu/contract/node_features.h"

namespace vgpu {
namespace {

std::string describe_limits(const PartitionPolicy& p) {
  auto limit = [](const std::optional<int>& v) { return v ? std::to_string(*v) : "unlimited"; };
  return fmt::format("{} per job, {} per user", limit(p.max_instances_per_job), limit(p.max_instances_per_user));
}

std::string describe_gpus(const PartitionPolicy& p) {
  return p.gpus ? fmt::format("{}", fmt::join(*p.gpus, ", ")) : "all";
}

std::string describe_pool(const VizPool& pool) {
  std::string out = fmt::format("{}: attach {}", pool.name, to_string(pool.attach));
  if (!pool.gpu_type.empty()) out += fmt::format(" ({})", pool.gpu_type);
  out += fmt::format(", image {}, {} MiB, {} vCPU, up to {} session(s), {}", pool.image, pool.memory_mib, pool.vcpus,
                     pool.max_sessions, to_string(pool.display));
  if (pool.max_geometry) out += fmt::format(", max {}x{}", pool.max_geometry->width, pool.max_geometry->height);
  return out;
}

}  // namespace

std::string summary(const PolicyFile& policy) {
  // The site's classes as each model realizes them, as the planner sees them.
  const Catalog catalog = Catalog::with_classes(Catalog::builtin(), policy.site_types());
  std::string out =
      fmt::format("{}: policy version {}, {} partition(s)\n", policy.source, policy.version, policy.partitions.size());
  out += fmt::format(
      "planner: re-plan every {} s, starvation after {} s, back to the idle layout {} s after "
      "demand{}\n",
      policy.planner.period_s, policy.planner.starvation_s, policy.planner.idle_return_s,
      policy.planner.prepare_slots ? ", planned slots prepared ahead of demand" : "");
  if (const auto& w = policy.planner.node_weights) {
    if (w->by_free_capacity())
      out += fmt::format("planner: node weight {} + {} per free GPU (the fullest nodes first)\n", w->base,
                         w->per_free_gpu);
    else
      out += fmt::format("planner: node weight {} while any vgpu is allocated, {} when idle\n", w->in_use, w->idle);
  }
  if (policy.planner.node_features) {
    // Slurm refuses at submission a preference no node has; nothing else would tell the admin.
    std::string partitions;
    for (const auto& p : policy.partitions) partitions += (partitions.empty() ? "" : ",") + p.name;
    out +=
        fmt::format("planner: node features {} for the submit filter's preferences\n", contract::kPlannerFeatureList);
    out += fmt::format(
        "planner: slurm.conf needs a State=FUTURE node with Features={} in "
        "partition(s) {} (docs/admin.md); without it Slurm refuses every job the filter gives a "
        "preference\n",
        contract::kPlannerFeatureList, partitions);
  }
  for (const auto& [name, image] : policy.images) {
    out += fmt::format("image {}: kernel {}, initrd {}", name, image.kernel, image.initrd);
    if (image.disk) out += fmt::format(", disk {}", *image.disk);
    if (image.cmdline) out += fmt::format(", cmdline \"{}\"", *image.cmdline);
    out += '\n';
  }
  for (const auto& p : policy.partitions) {
    out += fmt::format("\npartition {}\n", p.name);
    out += fmt::format("  nodes:  {}\n", p.nodes ? p.nodes->text() : "all");
    out += fmt::format("  gpus:   {}\n", describe_gpus(p));
    out += fmt::format("  limits: {}\n", describe_limits(p));
    out += fmt::format("  scrub:  {}\n", to_string(p.scrub));
    if (p.mig_mode == MigModePolicy::on_demand)
      out +=
          "  mig:    on_demand (MIG turned off for pending whole-GPU jobs, on for pending MIG jobs, per empty GPU)\n";
    else if (p.mig_mode != MigModePolicy::as_found)
      out += fmt::format("  mig:    {} (MIG turned {} where a GPU is found with it {})\n", to_string(p.mig_mode),
                         p.mig_mode == MigModePolicy::whole ? "off" : "on",
                         p.mig_mode == MigModePolicy::whole ? "on" : "off");
    out += "  profiles and idle layout per GPU model:\n";
    for (const auto& m : catalog.models()) {
      auto allowed = p.allowed_profiles_for(m);
      if (allowed.empty()) continue;
      out += fmt::format("    {:<11} {}\n", m.name, fmt::join(allowed, ", "));
      if (!p.idle_layout.empty())
        out += fmt::format("    {:<11} idle {}\n", "", policy_detail::place_idle(p, m).layout.describe());
    }
    if (p.profile_rule == PartitionPolicy::ProfileRule::every_profile)
      out += "    (no \"profiles\" given: every profile of every model)\n";
    for (const auto& pool : p.viz_pools) out += fmt::format("  viz pool {}\n", describe_pool(pool));
  }
  return out;
}

std::string summary_json(const PolicyFile& policy) {
  using nlohmann::json;
  const Catalog catalog = Catalog::with_classes(Catalog::builtin(), policy.site_types());
  json doc = {{"source", policy.source},
              {"version", policy.version},
              {"planner",
               {{"period_s", policy.planner.period_s},
                {"starvation_s", policy.planner.starvation_s},
                {"idle_return_s", policy.planner.idle_return_s}}},
              {"images", json::object()},
              {"partitions", json::object()}};
  if (const auto& w = policy.planner.node_weights) {
    if (w->by_free_capacity()) doc["planner"]["node_weights"] = {{"base", w->base}, {"per_free_gpu", w->per_free_gpu}};
    else
      doc["planner"]["node_weights"] = {{"in_use", w->in_use}, {"idle", w->idle}};
  }
  if (policy.planner.node_features) doc["planner"]["node_features"] = true;
  for (const auto& [name, image] : policy.images) {
    json j = {{"kernel", image.kernel}, {"initrd", image.initrd}};
    if (image.cmdline) j["cmdline"] = *image.cmdline;
    if (image.disk) j["disk"] = *image.disk;
    doc["images"][name] = j;
  }
  for (const auto& p : policy.partitions) {
    json j = {{"nodes", p.nodes ? json(p.nodes->text()) : json(nullptr)},
              {"gpus", p.gpus ? json(*p.gpus) : json("all")},
              {"max_instances_per_job", p.max_instances_per_job ? json(*p.max_instances_per_job) : json(nullptr)},
              {"max_instances_per_user", p.max_instances_per_user ? json(*p.max_instances_per_user) : json(nullptr)},
              {"scrub", to_string(p.scrub)},
              {"mig_mode", to_string(p.mig_mode)},
              {"idle_layout", p.idle_layout},
              {"profiles", json::object()},
              {"idle_layout_drawn", json::object()},
              {"viz_pools", json::array()}};
    for (const auto& m : catalog.models()) {
      auto allowed = p.allowed_profiles_for(m);
      if (allowed.empty()) continue;
      j["profiles"][m.name] = allowed;
      j["idle_layout_drawn"][m.name] = policy_detail::place_idle(p, m).layout.describe();
    }
    for (const auto& pool : p.viz_pools) {
      json jp = {{"name", pool.name},
                 {"attach", to_string(pool.attach)},
                 {"image", pool.image},
                 {"memory_mib", pool.memory_mib},
                 {"vcpus", pool.vcpus},
                 {"max_sessions", pool.max_sessions},
                 {"display", to_string(pool.display)}};
      if (!pool.gpu_type.empty()) jp["gpu_type"] = pool.gpu_type;
      if (pool.max_geometry)
        jp["max_geometry"] = fmt::format("{}x{}", pool.max_geometry->width, pool.max_geometry->height);
      j["viz_pools"].push_back(jp);
    }
    doc["partitions"][p.name] = j;
  }
  return doc.dump(2);
}

}  // namespace vgpu
