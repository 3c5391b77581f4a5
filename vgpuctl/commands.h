// vgpuctl subcommands. Each registers itself on the root app; its callback sets the exit code
// (0 ok, 1 the checked thing is bad / not possible, 2 usage or I/O error).
#pragma once

#include <CLI/CLI.hpp>

#include "vgpu/ledger/ledger_store.h"

#include <string>
#include <vector>

namespace vgpuctl {

// The nodes with a readable <dir>/<node>/ledger.json, sorted.
std::vector<std::string> node_ledgers_in(const std::string& dir);
// How vgpuctl opens a node's ledger: to read, creating nothing, waiting at most 5 s for a writer.
vgpu::LedgerStoreOptions ledger_reader_options();

void add_accounting_tres_command(CLI::App& app, int& exit_code);
void add_job_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_catalog_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_policy_command(CLI::App& app, int& exit_code);
void add_status_command(CLI::App& app, int& exit_code);
void add_slurm_check_command(CLI::App& app, int& exit_code);
void add_submit_table_command(CLI::App& app, int& exit_code);
void add_offers_commands(CLI::App& app, int& exit_code);

}  // namespace vgpuctl
