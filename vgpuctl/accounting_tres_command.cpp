// vgpuctl accounting-tres POLICY: the AccountingStorageTRES value for slurm.conf
// (vgpu/policy/accounting_tres.h), so slurmdbd accounts every vgpu type the policy offers.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "vgpu/policy/accounting_tres.h"

namespace vgpuctl {

void add_accounting_tres_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "accounting-tres", "Print slurm.conf's AccountingStorageTRES value: gres/vgpu and every vgpu type POLICY offers");
  auto file = std::make_shared<std::string>();
  cmd->add_option("POLICY", *file, "The policy JSON file")->required();
  cmd->callback([file, &exit_code] {
    auto policy = vgpu::load_policy_file(*file);
    if (!policy) {
      fmt::print(stderr, "vgpuctl: accounting-tres: {}\n", policy.error().message);
      exit_code = 2;
      return;
    }
    fmt::print("{}\n", vgpu::render_accounting_tres(
                           *policy, vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), policy->site_types())));
  });
}

}  // namespace vgpuctl
