// `vgpuctl status`: each GPU of each node as a picture of its slices, from the node ledgers.
#include <cstdlib>
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "picture.h"
#include "vgpu/ledger/ledger_store.h"
#include "vgpu/contract/node_files.h"

namespace vgpuctl {
namespace {

struct StatusArgs {
  std::string state_dir = vgpu::contract::resolve_state_dir(std::getenv("VGPU_STATE_DIR"));
  std::vector<std::string> nodes;
  bool json = false;
};

}  // namespace

std::vector<std::string> node_ledgers_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.starts_with(".")) continue;
      if (::access((dir + "/" + name + "/ledger.json").c_str(), R_OK) == 0) out.push_back(name);
    }
    ::closedir(d);
  }
  std::ranges::sort(out);
  return out;
}

vgpu::LedgerStoreOptions ledger_reader_options() {
  vgpu::LedgerStoreOptions opts;
  opts.create_directory = false;
  // A viewer changes nothing: an unreadable ledger is reported, never set aside for a rebuild.
  opts.read_only = true;
  opts.lock_timeout = std::chrono::milliseconds(5000);
  return opts;
}

namespace {

// An adopted instance (docs/admin.md, "Moving in") says so: the layout before slurm-vgpu made it.
std::string owner_label(const vgpu::LedgerInstance& i) {
  const char* adopted = i.adopted ? " adopted" : "";
  if (i.job) return fmt::format("job {}{}", *i.job, adopted);
  return fmt::format("{}{}", vgpu::to_string(i.state), adopted);
}

int run_status(const StatusArgs& a) {
  auto nodes = a.nodes.empty() ? node_ledgers_in(a.state_dir) : a.nodes;
  if (nodes.empty()) {
    fmt::print(stderr, "vgpuctl: status: no node ledgers under {}\n", a.state_dir);
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  for (const auto& node : nodes) {
    vgpu::LedgerStore store(a.state_dir + "/" + node, ledger_reader_options());
    auto ledger = store.load();
    if (!ledger) {
      fmt::print(stderr, "vgpuctl: status: node {}: {}\n", node, ledger.error().message);
      rc = 1;
      continue;
    }
    // Instances and slots may carry the node's classes' names: resolve them as the ledger records.
    const vgpu::Catalog catalog = vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), ledger->classes);
    if (a.json) {
      nlohmann::json n = {{"node", node}, {"generation", ledger->plan.generation}, {"gpus", nlohmann::json::array()}};
      for (const auto& g : ledger->gpus) {
        nlohmann::json gj = {{"index", g.index},
                             {"model", g.model},
                             {"instances", nlohmann::json::array()},
                             {"planned", nlohmann::json::array()}};
        for (const auto& i : ledger->instances)
          if (i.gpu == g.index)
            gj["instances"].push_back({{"profile", i.profile},
                                       {"start", i.placement.start},
                                       {"size", i.placement.size},
                                       {"job", i.job ? nlohmann::json(*i.job) : nlohmann::json(nullptr)},
                                       {"state", vgpu::to_string(i.state)},
                                       {"adopted", i.adopted},
                                       {"mig_uuid", i.mig_uuid}});
        for (const auto& s : ledger->plan.slots)
          if (s.gpu == g.index)
            gj["planned"].push_back(
                {{"profile", s.profile},
                 {"start", s.placement.start},
                 {"size", s.placement.size},
                 {"claimed_by_job", s.claimed_by_job ? nlohmann::json(*s.claimed_by_job) : nlohmann::json(nullptr)}});
        n["gpus"].push_back(gj);
      }
      for (const auto& vm : ledger->vms)
        n["viz_vms"].push_back(
            {{"job", vm.job}, {"domain", vm.domain}, {"device", vm.device}, {"state", vgpu::to_string(vm.state)}});
      out.push_back(n);
      continue;
    }
    fmt::print("== node {} (plan generation {}) ==\n", node, ledger->plan.generation);
    for (const auto& g : ledger->gpus) {
      const vgpu::GpuModel* model = catalog.find_model_for_product(g.model);
      if (!model) {
        fmt::print("GPU {}  {}: not a known MIG model\n", g.index, g.model);
        continue;
      }
      std::vector<DrawnInstance> drawn;
      for (const auto& i : ledger->instances)
        if (i.gpu == g.index)
          if (const auto* p = model->find_profile(i.profile))
            drawn.push_back({i.placement, i.profile, owner_label(i), false, p->compute_slices});
      for (const auto& s : ledger->plan.slots)
        if (s.gpu == g.index)
          if (const auto* p = model->find_profile(s.profile))
            drawn.push_back({s.placement, s.profile, s.claimed_by_job ? fmt::format("job {}", *s.claimed_by_job) : "",
                             true, p->compute_slices});
      fmt::print("{}", draw_gpu(g.index, *model, drawn));
    }
    for (const auto& vm : ledger->vms)
      fmt::print("viz VM {} for job {} on {} ({})\n", vm.domain, vm.job, vm.device, vgpu::to_string(vm.state));
  }
  if (a.json) std::cout << out.dump(2) << "\n";
  return rc;
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<StatusArgs>();
  auto* cmd = app.add_subcommand("status", "Draw each GPU's slices: running instances, planned slots, free space");
  cmd->add_option("--state-dir", a->state_dir, "Directory holding <node>/ledger.json")->capture_default_str();
  cmd->add_option("--node", a->nodes, "Only these nodes (repeatable)");
  cmd->add_flag("--json", a->json, "Machine-readable output");
  cmd->callback([a, &exit_code] { exit_code = run_status(*a); });
}

}  // namespace vgpuctl
