// vgpuctl: the admin's window into slurm-vgpu (catalog, policy and Slurm checks, planning, node status).
#include <cstdio>
#include <exception>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"vgpuctl - inspect and plan dynamic GPU partitions for Slurm"};
  app.require_subcommand(1);
  int exit_code = 0;
  vgpuctl::add_catalog_command(app, exit_code);
  vgpuctl::add_plan_command(app, exit_code);
  vgpuctl::add_status_command(app, exit_code);
  vgpuctl::add_job_command(app, exit_code);
  vgpuctl::add_report_command(app, exit_code);
  vgpuctl::add_submit_table_command(app, exit_code);
  vgpuctl::add_offers_commands(app, exit_code);
  vgpuctl::add_policy_command(app, exit_code);
  vgpuctl::add_accounting_tres_command(app, exit_code);
  vgpuctl::add_slurm_check_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpuctl: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
