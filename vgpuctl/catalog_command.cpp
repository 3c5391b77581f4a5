#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "vgpu/core/catalog_json.h"

namespace vgpuctl {
namespace {

std::string placements_text(const vgpu::Profile& p) {
  std::string s;
  for (const auto& pl : p.placements) s += fmt::format("{}{{{},{}}}", s.empty() ? "" : " ", pl.start, pl.size);
  return s;
}

void print_table(const vgpu::GpuModel& m) {
  fmt::print("{}  ({} compute slices, {} memory slices, {} SMs, {} MiB)\n", m.name, m.compute_slices,
             m.memory_slices, m.sm_count, m.memory_mib);
  fmt::print("  {:<12} {:>4} {:>4} {:>4} {:>5} {:>8} {:>4}  {}\n", "profile", "id", "cs", "ms", "SMs",
             "MiB", "max", "placements {start,size}");
  for (const auto& p : m.profiles)
    fmt::print("  {:<12} {:>4} {:>4} {:>4} {:>5} {:>8} {:>4}  {}\n", p.name, p.nvml_profile_id,
               p.compute_slices, p.memory_slices, p.sm_count, p.memory_mib, p.max_instances,
               placements_text(p));
}

}  // namespace

void add_catalog_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("catalog", "Print the MIG profiles and legal placements per GPU model");
  auto model = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--model", *model, "Only this model (e.g. H100-80GB)");
  cmd->add_flag("--json", *json, "Machine-readable output: {\"models\": [...]}");
  cmd->callback([model, json, &exit_code] {
    const auto& catalog = vgpu::Catalog::builtin();
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
    if (*json) {
      std::cout << vgpu::catalog_to_json(selected).dump(2) << "\n";
      return;
    }
    for (std::size_t i = 0; i < selected.size(); ++i) {
      if (i) fmt::print("\n");
      print_table(selected[i]);
    }
  });
}

}  // namespace vgpuctl
