// vgpuctl slurm-check POLICY [--from DIR]: the running Slurm's configuration against what the
// policy needs of it (slurm_conf_check.h). Asks slurmctld through scontrol, or reads the three
// outputs an admin captured elsewhere (--from), so a support case can be checked offline.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "commands.h"
#include "slurm_conf_check.h"
#include "slurm_query.h"

namespace vgpuctl {
namespace {

struct Source {
  const char* args;  // scontrol's arguments: what runs, and what to capture into `file` for --from
  const char* file;
};
constexpr Source kConfig{"show config", "config.txt"};
constexpr Source kPartitions{"show partition -o", "partitions.txt"};
constexpr Source kNodes{"--future show node -o", "nodes.txt"};

}  // namespace

void add_slurm_check_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "slurm-check",
      "Check the running Slurm's configuration against what POLICY needs of it: GresTypes, PrologFlags, "
      "the hooks, the submit filter, accounting, and each partition's FUTURE node (types, features). "
      "Exit 1 on errors, warnings alone exit 0");
  auto file = std::make_shared<std::string>();
  auto from = std::make_shared<std::string>();
  auto scontrol = std::make_shared<std::string>("scontrol");
  cmd->add_option("POLICY", *file, "The policy JSON file")->required();
  cmd->add_option(
      "--from", *from,
      fmt::format("Read captured outputs instead of asking slurmctld: DIR/{} (scontrol {}), "
                  "DIR/{} (scontrol {}), DIR/{} (scontrol {})",
                  kConfig.file, kConfig.args, kPartitions.file, kPartitions.args, kNodes.file, kNodes.args));
  cmd->add_option("--scontrol", *scontrol, "The scontrol to run (default: scontrol on PATH)");
  cmd->callback([file, from, scontrol, &exit_code] {
    auto policy = vgpu::load_policy_file(*file);
    if (!policy) {
      fmt::print(stderr, "vgpuctl: slurm-check: {}\n", policy.error().message);
      exit_code = 2;
      return;
    }
    SlurmViews views;
    for (auto [source, into] : {std::pair{kConfig, &views.config}, std::pair{kPartitions, &views.partitions},
                                std::pair{kNodes, &views.nodes}}) {
      std::string why;
      const std::string command = fmt::format("{} {}", *scontrol, source.args);
      auto text = from->empty() ? run(command, why) : read_file(fmt::format("{}/{}", *from, source.file), why);
      if (!text) {
        fmt::print(stderr, "vgpuctl: slurm-check: {}\n", why);
        exit_code = 2;
        return;
      }
      *into = std::move(*text);
    }
    const auto result =
        check_slurm_conf(*policy, vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), policy->site_types()), views);
    for (const auto& f : result.findings) fmt::print("{}: {}\n", f.error ? "error" : "warning", f.message);
    const int errors = result.errors();
    const int warnings = static_cast<int>(result.findings.size()) - errors;
    fmt::print("{}: {} partition(s) checked against Slurm {}: {} error(s), {} warning(s)\n", *file,
               result.partitions_checked, result.slurm_version.empty() ? "(version not shown)" : result.slurm_version,
               errors, warnings);
    exit_code = errors > 0 ? 1 : 0;
  });
}

}  // namespace vgpuctl
