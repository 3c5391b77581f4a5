#include "slurm_conf_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <ranges>
#include <set>
#include <string_view>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/node_features.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/policy/accounting_tres.h"
#include "vgpu/policy/policy_hostlist.h"
#include "vgpu/policy/submit_table.h"

namespace vgpuctl {
namespace {

constexpr std::string_view kGres = "vgpu";

// `scontrol show config`: "Key                     = value" per line.
std::map<std::string, std::string, std::less<>> parse_config(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (std::string_view line : vgpu::split_view(text, '\n')) {
    auto eq = line.find(" = ");
    if (eq == std::string_view::npos) continue;
    out[std::string(vgpu::trim_view(line.substr(0, eq)))] = std::string(vgpu::trim_view(line.substr(eq + 3)));
  }
  return out;
}

// One `-o` line: "Key=value Key=value ...". Values with blanks (OS=, Reason=) lose their tail,
// which none of the keys read here has.
std::map<std::string, std::string, std::less<>> parse_record(std::string_view line) {
  std::map<std::string, std::string, std::less<>> out;
  for (std::string_view token : vgpu::split_view(line, ' ')) {
    auto eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    out.emplace(std::string(token.substr(0, eq)), std::string(token.substr(eq + 1)));
  }
  return out;
}

std::string value_of(const std::map<std::string, std::string, std::less<>>& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

// "Alloc,Contain" has "alloc"; Slurm prints plugin lists with or without their "type/" prefix.
bool list_has(std::string_view list, std::string_view item) {
  for (std::string_view entry : vgpu::split_view(list, ',')) {
    entry = vgpu::trim_view(entry);
    if (auto slash = entry.rfind('/'); slash != std::string_view::npos) entry = entry.substr(slash + 1);
    if (entry.size() == item.size() && std::ranges::equal(entry, item, [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
  }
  return false;
}

bool is_unset(std::string_view value) { return value.empty() || value == "(null)" || value == "none"; }

// Slurm 23.02 and later allow several prologs and print them as "Prolog[0]", "Prolog[1]", ...;
// 22.05 prints one "Prolog".
bool hook_set(const std::map<std::string, std::string, std::less<>>& config, std::string_view hook) {
  return std::ranges::any_of(config, [&](const auto& kv) {
    const std::string_view key = kv.first;
    return (key == hook || (key.starts_with(hook) && key.substr(hook.size()).starts_with("["))) && !is_unset(kv.second);
  });
}

struct SlurmNode {
  std::string name;
  bool future = false;
  std::map<std::string, int> vgpu;  // configured Gres= counts of vgpu, by type
  std::vector<std::string> features;
  bool gpu_gres = false;  // Gres= also names gres/gpu
};

std::string joined(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

// Whether a node's Gres= ("gpu:h100:8(S:0-1),vgpu:free:56", "gres/gpu:2") names GRES `name`.
bool names_gres(std::string_view gres, std::string_view name) {
  for (std::string_view item : vgpu::split_view(gres, ',')) {
    item = vgpu::trim_view(item);
    if (item.starts_with("gres/")) item.remove_prefix(5);
    if (item.substr(0, item.find(':')) == name) return true;
  }
  return false;
}

// gres/gpu and gres/vgpu on one node serve the same GPUs twice: gres/gpu (AutoDetect=nvml, or
// File= devices) would hand out GPUs and MIG instances slurm-vgpu creates, gives and takes away,
// and slurmd's gpu_nvml cannot start cleanly while MIG is on with no instance (25.11 logs "MIG mode
// is enabled, but no MIG devices were found"; earlier releases are reported to stop slurmd there).
void check_gpu_beside_vgpu(const std::vector<SlurmNode>& nodes, std::vector<SlurmConfFinding>& out) {
  std::vector<std::string> both;
  for (const auto& n : nodes)
    if (!n.future && n.gpu_gres && !n.vgpu.empty()) both.push_back(n.name);
  if (!both.empty())
    out.push_back({true, fmt::format("node(s) {}: Gres has gpu beside vgpu: gres/gpu would hand out the GPUs and "
                                     "MIG instances slurm-vgpu makes and takes away, and with AutoDetect=nvml "
                                     "slurmd's gpu_nvml meets MIG mode with no instance; serve a node's GPUs "
                                     "through vgpu alone (docs/slurm.md)",
                                     joined(both))});
}

void check_config(const std::map<std::string, std::string, std::less<>>& config, const vgpu::PolicyFile& policy,
                  const vgpu::Catalog& catalog, std::vector<SlurmConfFinding>& out) {
  auto error = [&](std::string m) { out.push_back({true, std::move(m)}); };
  auto warning = [&](std::string m) { out.push_back({false, std::move(m)}); };
  if (!list_has(value_of(config, "GresTypes"), kGres))
    error(
        fmt::format("GresTypes = '{}' lacks vgpu: slurmctld and slurmd do not load gres/vgpu, and every "
                    "--gres=vgpu request is refused (docs/slurm.md)",
                    value_of(config, "GresTypes")));
  if (!list_has(value_of(config, "PrologFlags"), "Alloc"))
    error(
        fmt::format("PrologFlags = '{}' lacks Alloc: the prolog must create a job's instances when it is "
                    "allocated, on every node, before any step or its batch script starts (docs/slurm.md)",
                    value_of(config, "PrologFlags")));
  for (std::string_view hook : {"Prolog", "Epilog"})
    if (!hook_set(config, hook))
      error(fmt::format("{} is not set: {} (vgpu-{} in docs/slurm.md)", hook,
                        hook == "Prolog" ? "no job gets its instances" : "no job's instances are released",
                        hook == "Prolog" ? "prolog" : "epilog"));
  if (!list_has(value_of(config, "JobSubmitPlugins"), "lua"))
    warning(
        fmt::format("JobSubmitPlugins = '{}' lacks lua: without the submit filter an untyped --gres=vgpu:N "
                    "takes the padding type 'free', and a type the partition does not offer pends forever "
                    "instead of being refused at submission (docs/admin.md, the job_submit filter)",
                    value_of(config, "JobSubmitPlugins")));
  if (value_of(config, "AccountingStorageType").ends_with("slurmdbd")) {
    const std::string have_text = value_of(config, "AccountingStorageTRES");
    std::set<std::string_view> have;
    for (std::string_view tres : vgpu::split_view(have_text, ',')) have.insert(vgpu::trim_view(tres));
    std::vector<std::string> missing;
    const std::string wanted = vgpu::render_accounting_tres(policy, catalog);
    for (std::string_view tres : vgpu::split_view(wanted, ','))
      if (!have.contains(tres)) missing.emplace_back(tres);
    if (!missing.empty())
      warning(
          fmt::format("AccountingStorageTRES lacks {}: sacct and sreport do not show those instances by "
                      "type (`vgpuctl accounting-tres POLICY` prints the whole value; docs/accounting.md)",
                      joined(missing)));
  }
}

void check_partition(const vgpu::PartitionPolicy& partition, const vgpu::PolicyFile& policy,
                     const vgpu::Catalog& catalog,
                     const std::map<std::string, std::map<std::string, std::string, std::less<>>>& slurm_partitions,
                     const std::vector<SlurmNode>& nodes, std::vector<SlurmConfFinding>& out) {
  const std::string where = fmt::format("partition {}", partition.name);
  auto it = slurm_partitions.find(partition.name);
  if (it == slurm_partitions.end()) {
    out.push_back({false, fmt::format("{}: in the policy, not in slurmctld's partitions: the policy's rules for it "
                                      "apply to no job",
                                      where)});
    return;
  }
  const std::string node_expr = value_of(it->second, "Nodes");
  std::optional<vgpu::Hostlist> members;
  if (node_expr != "ALL") {
    auto parsed = vgpu::Hostlist::parse(is_unset(node_expr) ? std::string_view() : std::string_view(node_expr));
    if (!parsed) {
      out.push_back(
          {true, fmt::format("{}: cannot read its Nodes = '{}': {}", where, node_expr, parsed.error().message)});
      return;
    }
    members = std::move(*parsed);
  }
  auto in_partition = [&](const SlurmNode& n) { return !members || members->matches(n.name); };

  std::vector<const SlurmNode*> anchors;
  int largest_total = 0;
  std::string largest_node;
  for (const auto& n : nodes) {
    if (!in_partition(n)) continue;
    if (n.future) {
      anchors.push_back(&n);
    } else if (partition.allows_node(n.name)) {
      int total = 0;
      for (const auto& [type, count] : n.vgpu) total += count;
      if (total > largest_total) {
        largest_total = total;
        largest_node = n.name;
      }
    }
  }
  auto anchor_names = [&] {
    std::vector<std::string> names;
    for (const auto* a : anchors) names.push_back(a->name);
    return names.empty() ? std::string("it has none") : fmt::format("its FUTURE nodes: {}", joined(names));
  };

  std::vector<std::string> undeclared, short_declared;
  for (const auto& type : vgpu::types_offered(partition, catalog)) {
    int most = 0;
    for (const auto* a : anchors)
      if (auto c = a->vgpu.find(type); c != a->vgpu.end()) most = std::max(most, c->second);
    if (most == 0) undeclared.push_back(type);
    else if (most < largest_total)
      short_declared.push_back(fmt::format("{}:{}", type, most));
  }
  if (!undeclared.empty())
    out.push_back({true, fmt::format("{}: no FUTURE node of it declares vgpu:{} ({}): while no node advertises such "
                                     "an instance, slurmctld refuses a job asking for one ('Requested node "
                                     "configuration is not available'); declare every type the partition offers "
                                     "on a FUTURE node listed in it (docs/slurm.md)",
                                     where, fmt::join(undeclared, ", vgpu:"), anchor_names())});
  if (!short_declared.empty())
    out.push_back({false, fmt::format("{}: its FUTURE nodes declare vgpu:{}, below node {}'s total of {}: where a "
                                      "node can hold more of such a type than declared, a job asking for that many "
                                      "on one node is refused; declare each type at the largest node total "
                                      "(docs/slurm.md)",
                                      where, fmt::join(short_declared, ", vgpu:"), largest_node, largest_total)});

  if (policy.planner.node_features) {
    const auto wanted = vgpu::contract::parse_feature_list(vgpu::contract::kPlannerFeatureList);
    std::vector<std::string> best_missing = wanted;
    for (const auto* a : anchors) {
      std::vector<std::string> missing;
      for (const auto& f : wanted)
        if (std::ranges::find(a->features, f) == a->features.end()) missing.push_back(f);
      if (missing.size() < best_missing.size()) best_missing = missing;
    }
    if (!best_missing.empty())
      out.push_back(
          {true, fmt::format("{}: no FUTURE node of it has the feature(s) {} ({}): with "
                             "planner.node_features the submit filter gives jobs a preference for them, "
                             "and slurmctld refuses a preference no node of the partition has ('Invalid "
                             "preferred feature specification'); declare Features={} on a FUTURE node "
                             "listed in it (docs/admin.md, Node features)",
                             where, joined(best_missing), anchor_names(), vgpu::contract::kPlannerFeatureList)});
  }
}

}  // namespace

int SlurmConfCheck::errors() const {
  return static_cast<int>(std::ranges::count_if(findings, [](const auto& f) { return f.error; }));
}

SlurmConfCheck check_slurm_conf(const vgpu::PolicyFile& policy, const vgpu::Catalog& catalog, const SlurmViews& slurm) {
  SlurmConfCheck result;
  const auto config = parse_config(slurm.config);
  result.slurm_version = value_of(config, "SLURM_VERSION");
  check_config(config, policy, catalog, result.findings);

  std::map<std::string, std::map<std::string, std::string, std::less<>>> partitions;
  for (std::string_view line : vgpu::split_view(slurm.partitions, '\n')) {
    auto record = parse_record(line);
    if (auto name = value_of(record, "PartitionName"); !name.empty()) partitions[name] = std::move(record);
  }
  std::vector<SlurmNode> nodes;
  for (std::string_view line : vgpu::split_view(slurm.nodes, '\n')) {
    auto record = parse_record(line);
    SlurmNode node;
    node.name = value_of(record, "NodeName");
    if (node.name.empty()) continue;
    // "FUTURE", and on some releases with flags: "FUTURE+CLOUD".
    node.future = vgpu::split_view(value_of(record, "State"), '+').front() == "FUTURE";
    auto counts = vgpu::parse_gres_counts(value_of(record, "Gres"), kGres);
    if (!counts) {
      result.findings.push_back({true, fmt::format("node {}: cannot read its Gres = '{}': {}", node.name,
                                                   value_of(record, "Gres"), counts.error().message)});
      continue;
    }
    node.vgpu = std::move(*counts);
    node.features = vgpu::contract::parse_feature_list(value_of(record, "AvailableFeatures"));
    node.gpu_gres = names_gres(value_of(record, "Gres"), "gpu");
    nodes.push_back(std::move(node));
  }
  check_gpu_beside_vgpu(nodes, result.findings);

  for (const auto& partition : policy.partitions) {
    check_partition(partition, policy, catalog, partitions, nodes, result.findings);
    ++result.partitions_checked;
  }
  return result;
}

}  // namespace vgpuctl
