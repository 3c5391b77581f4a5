// One entry of "partitions": allowed profiles, limits, nodes, GPUs, idle layout, scrub, MIG mode,
// viz pools.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "policy_reader.h"

namespace vgpu::policy_detail {
namespace {

// Returns false when the field is present but bad, so later checks that depend on the allowed
// profiles (idle layout, mig-vgpu pools) stay quiet instead of repeating the same mistake.
bool parse_profiles(Diagnostics& d, const Json& spec, const FieldPath& path, PartitionPolicy& p) {
  const Json* v = member(spec, "profiles");
  if (!v) return true;
  FieldPath at = path.key("profiles");
  if (v->is_array()) {
    auto list = read_profile_list(d, *v, at, all_models(d.catalog()), "any known GPU model");
    if (!list) return false;
    p.profile_rule = PartitionPolicy::ProfileRule::same_for_every_model;
    p.profiles = std::move(*list);
    return true;
  }
  if (!v->is_object()) {
    d.at_value(at, "must be a list of profile names, or an object mapping GPU model names to such lists, {}", got(*v));
    return false;
  }
  if (v->empty()) {
    d.at_value(at,
               [&] { return fmt::format("must name at least one GPU model (known: {})", d.catalog().model_names()); });
    return false;
  }
  bool ok = true;
  for (const auto& [model_name, list] : v->items()) {
    FieldPath model_at = at.key(model_name);
    const GpuModel* model = d.catalog().find_model(model_name);
    if (!model) {
      d.at_key(model_at, [&] { return fmt::format("unknown GPU model (known: {})", d.catalog().model_names()); });
      ok = false;
      continue;
    }
    auto names = read_profile_list(d, list, model_at, {model}, model->name);
    if (!names) {
      ok = false;
      continue;
    }
    p.profiles_by_model[model_name] = std::move(*names);
  }
  if (ok) p.profile_rule = PartitionPolicy::ProfileRule::per_model;
  return ok;
}

void parse_limits(Diagnostics& d, const Json& spec, const FieldPath& path, PartitionPolicy& p) {
  if (const Json* v = member(spec, "max_instances_per_job"))
    p.max_instances_per_job = read_int(d, *v, path.key("max_instances_per_job"), 1);
  if (const Json* v = member(spec, "max_instances_per_user"))
    p.max_instances_per_user = read_int(d, *v, path.key("max_instances_per_user"), 1);
  if (p.max_instances_per_job && p.max_instances_per_user && *p.max_instances_per_job > *p.max_instances_per_user)
    d.at_value(path.key("max_instances_per_job"), "must not exceed max_instances_per_user ({}), or no job could use it",
               *p.max_instances_per_user);
}

void parse_nodes(Diagnostics& d, const Json& spec, const FieldPath& path, PartitionPolicy& p) {
  const Json* v = member(spec, "nodes");
  if (!v) return;
  FieldPath at = path.key("nodes");
  if (!expect_array(d, *v, at)) return;
  if (v->empty()) {
    d.at_value(at, "must list at least one hostlist (leave the field out for every node)");
    return;
  }
  std::vector<std::string> parts;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    auto text = read_string(d, (*v)[i], at.index(i));
    if (!text) {
      ok = false;
      continue;
    }
    if (auto list = Hostlist::parse(*text); !list) {
      d.at_value(at.index(i), list.error().message);
      ok = false;
      continue;
    }
    parts.push_back(*text);
  }
  if (!ok) return;
  auto joined = Hostlist::parse(fmt::format("{}", fmt::join(parts, ",")));
  if (!joined) {
    d.at_value(at, joined.error().message);
    return;
  }
  p.nodes = std::move(*joined);
}

void parse_gpus(Diagnostics& d, const Json& spec, const FieldPath& path, PartitionPolicy& p) {
  const Json* v = member(spec, "gpus");
  if (!v) return;
  FieldPath at = path.key("gpus");
  if (v->is_string() && *v == "all") return;
  if (!v->is_array() || v->empty()) {
    d.at_value(at, "must be \"all\" or a non-empty list of GPU indices 0..63, {}", got(*v));
    return;
  }
  std::vector<int> indices;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    auto index = read_int(d, (*v)[i], at.index(i), 0, 63);
    if (!index) {
      ok = false;
    } else if (std::ranges::find(indices, *index) != indices.end()) {
      d.at_value(at.index(i), "GPU {} is listed twice", *index);
      ok = false;
    } else {
      indices.push_back(*index);
    }
  }
  if (!ok) return;
  std::ranges::sort(indices);
  p.gpus = std::move(indices);
}

std::string describe_allowed(const Diagnostics& d, const PartitionPolicy& p) {
  std::vector<std::string> parts;
  for (const auto& m : d.catalog().models()) {
    auto names = p.allowed_profiles_for(m);
    if (!names.empty()) parts.push_back(fmt::format("{}: {}", m.name, fmt::join(names, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

void check_idle_layout(Diagnostics& d, const PartitionPolicy& p, const FieldPath& at) {
  for (std::size_t i = 0; i < p.idle_layout.size(); ++i) {
    const auto& name = p.idle_layout[i];
    bool somewhere = std::ranges::any_of(d.catalog().models(), [&](const GpuModel& m) {
      auto allowed = p.allowed_profiles_for(m);
      return std::ranges::find(allowed, name) != allowed.end();
    });
    if (!somewhere)
      d.at_value(at.index(i), [&] {
        return fmt::format("{} is not allowed on any GPU model this partition uses (allowed: {})", name,
                           describe_allowed(d, p));
      });
  }
  for (const auto& m : d.catalog().models()) {
    if (!p.uses_model(m)) continue;
    for (const auto& problem : place_idle(p, m).problems) d.at_value(at.index(problem.index), problem.message);
  }
}

void parse_idle_layout(Diagnostics& d, const Json& spec, const FieldPath& path, PartitionPolicy& p, bool profiles_ok) {
  const Json* v = member(spec, "idle_layout");
  if (!v) return;
  FieldPath at = path.key("idle_layout");
  if (!expect_array(d, *v, at)) return;
  std::vector<std::string> names;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    auto name = read_string(d, (*v)[i], at.index(i));
    if (name) {
      // A class of the file is not spelled like a profile: each model realizes it, as for a job.
      const Profile* site_type = nullptr;
      for (const auto& m : d.catalog().models())
        if (const Profile* found = m.find_profile(*name); found && !found->realizes.empty()) site_type = found;
      if (site_type && site_type->shares > 0) {
        d.at_value(at.index(i), "{} is a share type: an idle layout lists instances (a profile or a class)", *name);
        name.reset();
      } else if (auto spelled = parse_profile_name(*name); !spelled && !site_type) {
        d.at_value(at.index(i), spelled.error().message);
        name.reset();
      }
    }
    if (!name) {
      ok = false;
      continue;
    }
    names.push_back(*name);
  }
  if (!ok) return;
  // An instance takes at least one compute slice, and each entry is placed on every model the
  // partition allows it on: a list longer than all models' slices together cannot fit, and placing
  // it entry by entry would cost as much as the list is long.
  std::size_t most = 0;
  for (const auto& m : d.catalog().models()) most += static_cast<std::size_t>(m.compute_slices);
  if (names.size() > most) {
    d.at_value(at,
               "lists {} instances, more than fit: a GPU holds at most one instance per compute slice, "
               "{} over all known GPU models",
               names.size(), most);
    return;
  }
  p.idle_layout = std::move(names);
  if (profiles_ok) check_idle_layout(d, p, at);
}

// "on_demand" moves GPUs between whole and MIG for pending jobs: only where the partition offers
// both on one model, or one side's jobs would never be asked for.
void check_on_demand_profiles(Diagnostics& d, const PartitionPolicy& p, const FieldPath& at) {
  if (p.mig_mode != MigModePolicy::on_demand) return;
  bool both = p.profile_rule == PartitionPolicy::ProfileRule::every_profile;
  for (const auto& m : Catalog::builtin().models()) {
    if (m.partitioning != Partitioning::mig || !m.whole_gpu_profile()) continue;
    const auto allowed = p.allowed_profiles_for(m);
    both = both || (std::ranges::any_of(allowed, names_whole_gpu) &&
                    std::ranges::any_of(allowed, [](const std::string& n) { return !names_whole_gpu(n); }));
  }
  if (!both)
    d.at_value(at,
               "\"on_demand\" switches GPUs between whole and MIG mode, but \"profiles\" offers no NVIDIA model "
               "both its whole GPU (whole.<M>gb) and a MIG profile");
}

}  // namespace

PartitionPolicy parse_partition(Diagnostics& d, const Json& value, const FieldPath& path, std::string name,
                                const Json* images) {
  PartitionPolicy p;
  p.name = std::move(name);
  if (!expect_object(d, value, path)) return p;
  reject_unknown_fields(d, value, path,
                        {"profiles", "max_instances_per_job", "max_instances_per_user", "nodes", "gpus", "idle_layout",
                         "scrub", "mig_mode", "share_across_users", "viz_pools", "comment"});
  bool profiles_ok = parse_profiles(d, value, path, p);
  parse_limits(d, value, path, p);
  parse_nodes(d, value, path, p);
  parse_gpus(d, value, path, p);
  parse_idle_layout(d, value, path, p, profiles_ok);
  if (const Json* v = member(value, "scrub")) {
    if (auto mode = read_choice(d, *v, path.key("scrub"), {"required", "optional"}))
      p.scrub = *mode == "required" ? ScrubMode::required : ScrubMode::optional;
  }
  if (const Json* v = member(value, "mig_mode")) {
    if (auto mode = read_choice(d, *v, path.key("mig_mode"), {"as_found", "partitioned", "whole", "on_demand"}))
      p.mig_mode = *mode == "partitioned" ? MigModePolicy::partitioned
                   : *mode == "whole"     ? MigModePolicy::whole
                   : *mode == "on_demand" ? MigModePolicy::on_demand
                                          : MigModePolicy::as_found;
    if (profiles_ok) check_on_demand_profiles(d, p, path.key("mig_mode"));
  }
  if (const Json* v = member(value, "share_across_users"))
    if (auto b = read_bool(d, *v, path.key("share_across_users"))) p.share_across_users = *b;
  if (const Json* v = member(value, "comment")) read_string(d, *v, path.key("comment"));
  if (const Json* v = member(value, "viz_pools")) {
    FieldPath at = path.key("viz_pools");
    if (expect_array(d, *v, at)) {
      for (std::size_t i = 0; i < v->size(); ++i)
        if (auto pool = parse_viz_pool(d, (*v)[i], at.index(i), p, images)) p.viz_pools.push_back(std::move(*pool));
    }
  }
  return p;
}

}  // namespace vgpu::policy_detail
