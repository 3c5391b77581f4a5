#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "vgpu/core/catalog_json.h"
#include "vgpu/policy/policy.h"

namespace vgpuctl {
namespace {

std::string placements_text(const vgpu::Profile& p) {
  std::string s;
  for (const auto& pl : p.placements) s += fmt::format("{}{{{},{}}}", s.empty() ? "" : " ", pl.start, pl.size);
  return s;
}

void print_table(const vgpu::GpuModel& m) {
  fmt::print("{}  ({} compute slices, {} memory slices, {} SMs, {} MiB)\n", m.name, m.compute_slices, m.memory_slices,
             m.sm_count, m.memory_mib);
  fmt::print("  {:<12} {:>4} {:>4} {:>4} {:>5} {:>8} {:>4}  {}\n", "profile", "id", "cs", "ms", "SMs", "MiB", "max",
             "placements {start,size}");
  for (const auto& p : m.profiles)
    fmt::print("  {:<12} {:>4} {:>4} {:>4} {:>5} {:>8} {:>4}  {}\n", p.name, p.nvml_profile_id, p.compute_slices,
               p.memory_slices, p.sm_count, p.memory_mib, p.max_instances, placements_text(p));
}

}  // namespace

void add_catalog_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("catalog",
                                 "Print the profiles (MIG, AMD partition modes) and legal placements per GPU "
                                 "model, and with --policy how each model realizes the policy's classes");
  auto model = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto policy_file = std::make_shared<std::string>();
  cmd->add_option("--model", *model, "Only this model (e.g. H100-80GB)");
  cmd->add_option("--policy", *policy_file, "Also show the classes of this policy file, resolved per model");
  cmd->add_flag("--json", *json,
                "Machine-readable output: {\"models\": [...], \"classes\": {class: {model: profile}}, "
                "\"share_types\": {type: {model: {\"instance\": profile, \"shares\": N}}}}");
  cmd->callback([model, json, policy_file, &exit_code] {
    const auto& catalog = vgpu::Catalog::builtin();
    std::vector<vgpu::GpuClass> classes;
    if (!policy_file->empty()) {
      auto policy = vgpu::load_policy_file(*policy_file);
      if (!policy) {
        fmt::print(stderr, "vgpuctl: catalog: {}\n", policy.error().message);
        exit_code = 2;
        return;
      }
      classes = policy->site_types();
    }
    std::vector<vgpu::GpuModel> selected;
    if (model->empty()) {
      selected.assign(catalog.models().begin(), catalog.models().end());
    } else {
      auto m = catalog.require_model(*model);
      if (!m) {
        fmt::print(stderr, "vgpuctl: catalog: {}\n", m.error().message);
        exit_code = 1;
        return;
      }
      selected.push_back(**m);
    }
    // A class on each model: the hardware profile it is realized as there, or none.
    auto realized = [&](const vgpu::GpuClass& c, const vgpu::GpuModel& m) -> std::string {
      const vgpu::Profile* p = vgpu::realize(m, c);
      if (!p) return "none";
      return c.shares ? fmt::format("{}/{}", p->name, c.shares) : p->name;
    };
    if (*json) {
      auto doc = vgpu::catalog_to_json(selected);
      nlohmann::json by_class = nlohmann::json::object(), by_share_type = nlohmann::json::object();
      for (const auto& c : classes)
        for (const auto& m : selected) {
          if (c.shares == 0) {
            by_class[c.name][m.name] = realized(c, m);
          } else {
            const vgpu::Profile* p = vgpu::realize(m, c);
            by_share_type[c.name][m.name] =
                p ? nlohmann::json{{"instance", p->name}, {"shares", c.shares}} : nlohmann::json(nullptr);
          }
        }
      if (!by_class.empty()) doc["classes"] = std::move(by_class);
      if (!by_share_type.empty()) doc["share_types"] = std::move(by_share_type);
      std::cout << doc.dump(2) << "\n";
      return;
    }
    for (std::size_t i = 0; i < selected.size(); ++i) {
      if (i) fmt::print("\n");
      print_table(selected[i]);
    }
    if (classes.empty()) return;
    fmt::print("\nclasses and share types ({}): the profile each model realizes one as (/N: one of N shares)\n",
               *policy_file);
    fmt::print("  {:<16}", "type");
    for (const auto& m : selected) fmt::print(" {:<13}", m.name);
    fmt::print("\n");
    for (const auto& c : classes) {
      fmt::print("  {:<16}", c.name);
      for (const auto& m : selected) fmt::print(" {:<13}", realized(c, m));
      fmt::print("\n");
    }
  });
}

}  // namespace vgpuctl
