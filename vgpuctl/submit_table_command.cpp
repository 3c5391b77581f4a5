// vgpuctl submit-table POLICY --default-partition P: writes the job_submit filter's
// vgpu_profiles.lua (vgpu/policy/submit_table.h) to stdout.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "vgpu/policy/submit_table.h"

namespace vgpuctl {

void add_submit_table_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "submit-table", "Print vgpu_profiles.lua for job_submit.lua: the vgpu types each partition of POLICY offers");
  auto file = std::make_shared<std::string>();
  auto default_partition = std::make_shared<std::string>();
  cmd->add_option("POLICY", *file, "The policy JSON file")->required();
  cmd->add_option("--default-partition", *default_partition,
                  "The partition slurm.conf marks Default=YES (checks jobs that name none)")
      ->required();
  cmd->callback([file, default_partition, &exit_code] {
    auto policy = vgpu::load_policy_file(*file);
    if (!policy) {
      fmt::print(stderr, "vgpuctl: submit-table: {}\n", policy.error().message);
      exit_code = 2;
      return;
    }
    auto table = vgpu::render_submit_table(
        *policy, vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), policy->site_types()), *default_partition);
    if (!table) {
      fmt::print(stderr, "vgpuctl: submit-table: {}\n", table.error().message);
      exit_code = 1;
      return;
    }
    fmt::print("{}", *table);
  });
}

}  // namespace vgpuctl
