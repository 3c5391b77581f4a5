// `vgpuctl job <id>`: what one job got, from the node ledgers under the state directory: each
// instance (node, GPU, profile, slices, MIG UUID, state) and the picture of every GPU it is on;
// for a job that ended, its tenancies from the nodes' history (docs/ledger.md).
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "picture.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpuctl {
namespace {

struct JobArgs {
  std::string state_dir = vgpu::contract::resolve_state_dir(std::getenv("VGPU_STATE_DIR"));
  std::uint64_t job = 0;
  bool json = false;
};

std::string utc(std::int64_t t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(static_cast<std::time_t>(t)));
}

std::string slices(const vgpu::Placement& p) {
  return p.size == 1 ? fmt::format("slice {}", p.start) : fmt::format("slices {}-{}", p.start, p.end() - 1);
}

int run_job(const JobArgs& a) {
  const auto nodes = node_ledgers_in(a.state_dir);
  if (nodes.empty()) {
    fmt::print(stderr, "vgpuctl: job: no node ledgers under {}\n", a.state_dir);
    return 2;
  }
  nlohmann::json out = {{"job", a.job}, {"instances", nlohmann::json::array()}, {"ended", nlohmann::json::array()}};
  std::string text;
  std::vector<std::pair<std::int64_t, std::string>> ended;  // oldest first over all nodes
  int problems = 0;
  for (const auto& node : nodes) {
    vgpu::LedgerStore store(a.state_dir + "/" + node, ledger_reader_options());
    auto ledger = store.load();
    if (!ledger) {
      fmt::print(stderr, "vgpuctl: job: node {}: {}\n", node, ledger.error().message);
      ++problems;
      continue;
    }
    // Instances and slots may carry the node's classes' names: resolve them as the ledger records.
    const vgpu::Catalog catalog = vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), ledger->classes);
    for (const auto& g : ledger->gpus) {
      std::vector<const vgpu::LedgerInstance*> mine;
      for (const auto& i : ledger->instances)
        if (i.gpu == g.index && i.job == a.job) mine.push_back(&i);
      if (mine.empty()) continue;
      for (const auto* i : mine) {
        out["instances"].push_back({{"node", node},
                                    {"gpu", g.index},
                                    {"gpu_uuid", g.uuid},
                                    {"profile", i->profile},
                                    {"start", i->placement.start},
                                    {"size", i->placement.size},
                                    {"mig_uuid", i->mig_uuid},
                                    {"state", vgpu::to_string(i->state)},
                                    {"adopted", i->adopted},
                                    {"user", i->user},
                                    {"since", i->created_at}});
        // "since" of an adopted instance is when slurm-vgpu found it, not when the job got it.
        text += fmt::format("{} GPU {}  {}  {}  {}  {}{}  since {}\n", node, g.index, i->profile, slices(i->placement),
                            i->mig_uuid, vgpu::to_string(i->state), i->adopted ? " (adopted: the layout before)" : "",
                            utc(i->created_at));
      }
      const vgpu::GpuModel* model = catalog.find_model_for_product(g.model);
      if (!model) continue;
      // Only this job's instances are named; the rest of the GPU shows as taken or free.
      std::vector<DrawnInstance> drawn;
      for (const auto& i : ledger->instances)
        if (i.gpu == g.index)
          if (const auto* p = model->find_profile(i.profile))
            drawn.push_back({i.placement, i.job == a.job ? i.profile : "other",
                             i.job == a.job ? fmt::format("job {}", a.job) : "", false, p->compute_slices});
      text += draw_gpu(g.index, *model, drawn);
    }
    auto history = store.history();
    if (!history) {
      fmt::print(stderr, "vgpuctl: job: node {}: {}\n", node, history.error().message);
      ++problems;
      continue;
    }
    for (const auto& h : *history) {
      if (h.job != a.job) continue;
      out["ended"].push_back({{"node", node},
                              {"gpu", h.gpu},
                              {"profile", h.profile},
                              {"start", h.placement.start},
                              {"size", h.placement.size},
                              {"mig_uuid", h.mig_uuid},
                              {"user", h.user},
                              {"start_time", h.start_time},
                              {"end_time", h.end_time},
                              {"end_reason", h.end_reason}});
      ended.emplace_back(h.start_time, fmt::format("{} GPU {}  {}  {}  {}  {} to {} ({} s), {}\n", node, h.gpu,
                                                   h.profile, slices(h.placement), h.mig_uuid, utc(h.start_time),
                                                   utc(h.end_time), h.end_time - h.start_time, h.end_reason));
    }
  }
  std::ranges::stable_sort(ended, {}, &std::pair<std::int64_t, std::string>::first);
  for (const auto& [start, line] : ended) text += line;
  const bool found = !out["instances"].empty() || !out["ended"].empty();
  if (a.json) {
    std::cout << out.dump(2) << "\n";
  } else if (found) {
    fmt::print("job {}\n{}", a.job, text);
  } else {
    fmt::print(stderr, "vgpuctl: job {}: no instance and no history record on any node under {}\n", a.job, a.state_dir);
  }
  if (problems > 0) return 2;
  return found ? 0 : 1;
}

}  // namespace

void add_job_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<JobArgs>();
  auto* cmd = app.add_subcommand("job",
                                 "What a job got: its instances (node, GPU, profile, slices, MIG UUID) and their GPUs, "
                                 "or its ended tenancies");
  cmd->add_option("JOBID", a->job, "Slurm job id (an array task's own id)")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--state-dir", a->state_dir, "Directory holding <node>/ledger.json")->capture_default_str();
  cmd->add_flag("--json", a->json, "Machine-readable output");
  cmd->callback([a, &exit_code] { exit_code = run_job(*a); });
}

}  // namespace vgpuctl
