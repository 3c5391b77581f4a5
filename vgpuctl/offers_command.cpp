// `vgpuctl offers [PARTITION...]` and `vgpuctl why JOB`: what each partition offers per GPU model
// and has free now, and why a pending vgpu job waits (partition_offers.h). Any user may run them:
// they read the policy file and what `squeue` and `scontrol show node` show every user.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "commands.h"
#include "partition_offers.h"
#include "slurm_query.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/policy/policy.h"

namespace vgpuctl {
namespace {

struct QueryArgs {
  std::string policy = vgpu::contract::resolve_policy_path(std::getenv("VGPU_POLICY"));
  std::string slurm_bin;  // "": Slurm's commands from PATH
  std::vector<std::string> partitions;
  std::string job;
};

std::string tool(const QueryArgs& a, const char* name) {
  return a.slurm_bin.empty() ? std::string(name) : a.slurm_bin + "/" + name;
}

// What both commands read; `why` says what failed (exit 2).
struct Inputs {
  vgpu::PolicyFile policy;
  vgpu::Catalog catalog;
  SlurmNodes nodes;
};
std::optional<Inputs> read_inputs(const QueryArgs& a, std::string& why) {
  auto policy = vgpu::load_policy_file(a.policy);
  if (!policy) {
    why = policy.error().message;
    return std::nullopt;
  }
  auto text = run(tool(a, "scontrol") + " -o -d show node", why);
  if (!text) return std::nullopt;
  auto catalog = vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), policy->site_types());
  return Inputs{std::move(*policy), std::move(catalog), parse_slurm_nodes(*text)};
}

int run_offers(const QueryArgs& a) {
  std::string why;
  auto in = read_inputs(a, why);
  if (!in) return fmt::print(stderr, "vgpuctl: offers: {}\n", why), 2;
  for (const auto& name : a.partitions)
    if (in->policy.partition(name) == nullptr)
      return fmt::print(stderr, "vgpuctl: offers: partition {}: not in {} (no vgpu there)\n", name, a.policy), 1;
  for (const auto& partition : in->policy.partitions) {
    if (!a.partitions.empty() && std::ranges::find(a.partitions, partition.name) == a.partitions.end()) continue;
    for (const auto& line : describe_offer(partition_offer(partition, in->catalog, in->nodes)))
      fmt::print("{}\n", line);
  }
  return 0;
}

int run_why(const QueryArgs& a) {
  if (a.job.empty() || a.job.find_first_not_of("0123456789_") != std::string::npos)
    return fmt::print(stderr, "vgpuctl: why: job '{}': not a job id (42, or 42_7 for an array task)\n", a.job), 2;
  std::string why;
  auto in = read_inputs(a, why);
  if (!in) return fmt::print(stderr, "vgpuctl: why: {}\n", why), 2;
  auto pending =
      run(fmt::format("{} -h -j {} -t PD -o '{}'", tool(a, "squeue"), a.job, vgpu::kSqueuePendingFormat), why);
  if (!pending) return fmt::print(stderr, "vgpuctl: why: job {}: {}\n", a.job, why), 2;
  const auto jobs = vgpu::parse_pending_jobs(*pending);
  if (jobs.jobs.empty()) {
    auto state = run(fmt::format("{} -h -j {} -o %T", tool(a, "squeue"), a.job), why);
    if (!state || state->empty())
      return fmt::print(stderr, "vgpuctl: why: job {}: Slurm knows no such job\n", a.job), 1;
    return fmt::print("job {} is {}, not pending\n", a.job, state->substr(0, state->find('\n'))), 0;
  }
  for (const auto& line : explain_pending(jobs.jobs[0], in->policy, in->catalog, in->nodes)) fmt::print("{}\n", line);
  for (const auto& error : in->nodes.errors) fmt::print(stderr, "vgpuctl: why: skipped: {}\n", error);
  return 0;
}

void common_options(CLI::App& cmd, QueryArgs& a) {
  cmd.add_option("--policy", a.policy, "The policy file (default: $VGPU_POLICY or the installed one)");
  cmd.add_option("--slurm-bin", a.slurm_bin, "Where squeue and scontrol are (default: PATH)");
}

}  // namespace

void add_offers_commands(CLI::App& app, int& exit_code) {
  auto offers_args = std::make_shared<QueryArgs>();
  auto* offers = app.add_subcommand(
      "offers", "What each partition offers: its vgpu types on each GPU model, its caps, and what is free now");
  offers->add_option("PARTITION", offers_args->partitions, "Only these partitions");
  common_options(*offers, *offers_args);
  offers->callback([offers_args, &exit_code] { exit_code = run_offers(*offers_args); });

  auto why_args = std::make_shared<QueryArgs>();
  auto* why = app.add_subcommand("why", "Why a pending job waits: each vgpu type it asks for, per partition");
  why->add_option("JOB", why_args->job, "The job id")->required();
  common_options(*why, *why_args);
  why->callback([why_args, &exit_code] { exit_code = run_why(*why_args); });
}

}  // namespace vgpuctl
