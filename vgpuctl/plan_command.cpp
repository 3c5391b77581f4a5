// `vgpuctl plan`: explains what a node would advertise for a given occupancy and demand.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "layout_spec.h"
#include "picture.h"

namespace vgpuctl {
namespace {

struct PlanArgs {
  std::string model = "H100-80GB";
  int gpus = 8;
  std::string running;
  std::string demand;
  std::string starving;
  std::string idle;
  std::string allowed;
  bool json = false;
};

vgpu::Result<std::vector<vgpu::PlannerGpu>> build_node(const vgpu::GpuModel& model, const PlanArgs& a) {
  std::vector<vgpu::PlannerGpu> gpus;
  for (int i = 0; i < a.gpus; ++i) gpus.push_back({vgpu::GpuLayout(model), true});
  auto running = parse_running(a.running);
  if (!running) return std::unexpected(running.error());
  for (const auto& r : *running) {
    std::string ctx = fmt::format("--running {}:{}@{}", r.gpu, r.profile, r.start);
    if (r.gpu >= a.gpus)
      return vgpu::fail(vgpu::ErrorCode::invalid_argument, fmt::format("{}: node has {} GPUs", ctx, a.gpus));
    auto profile = vgpu::Catalog::builtin().require_profile(model, r.profile);
    if (!profile) return std::unexpected(profile.error().within(ctx));
    auto pl = std::ranges::find(profile.value()->placements, r.start, &vgpu::Placement::start);
    if (pl == profile.value()->placements.end())
      return vgpu::fail(vgpu::ErrorCode::invalid_argument,
                        fmt::format("{}: {} cannot start at slice {}", ctx, r.profile, r.start));
    if (auto placed = gpus[static_cast<std::size_t>(r.gpu)].occupied.place(**profile, *pl); !placed)
      return std::unexpected(placed.error().within(ctx));
  }
  return gpus;
}

int run_plan(const PlanArgs& a) {
  auto model = vgpu::Catalog::builtin().require_model(a.model);
  if (!model) {
    fmt::print(stderr, "vgpuctl: plan: {}\n", model.error().message);
    return 2;
  }
  auto gpus = build_node(**model, a);
  auto demand = parse_demand(a.demand);
  if (!gpus || !demand) {
    fmt::print(stderr, "vgpuctl: plan: {}\n", (!gpus ? gpus.error() : demand.error()).message);
    return 2;
  }
  for (const auto& s : split_list(a.starving))
    for (auto& d : *demand)
      if (d.profile == s) d.starving = true;
  vgpu::PlannerConfig config{split_list(a.allowed), split_list(a.idle)};
  for (const auto& d : *demand)
    if (!(*model)->find_profile(d.profile)) {
      fmt::print(stderr, "vgpuctl: plan: --demand: profile {}: unknown profile on {} (valid: {})\n", d.profile,
                 (*model)->name, (*model)->profile_names());
      return 2;
    }
  vgpu::Plan plan = vgpu::plan_node(*gpus, config, *demand);
  if (auto ok = vgpu::verify_jointly_placeable(*gpus, plan); !ok) {
    fmt::print(stderr, "vgpuctl: plan: internal error: plan not placeable: {}\n", ok.error().message);
    return 2;
  }

  if (a.json) {
    nlohmann::json j;
    j["model"] = (*model)->name;
    j["counts"] = plan.counts();
    j["reserved_gpus"] = plan.reserved_gpus;
    j["notes"] = plan.notes;
    j["slots"] = nlohmann::json::array();
    for (const auto& s : plan.slots)
      j["slots"].push_back({{"gpu", s.gpu},
                            {"profile", s.profile->name},
                            {"start", s.placement.start},
                            {"size", s.placement.size},
                            {"reason", s.reason}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (std::size_t g = 0; g < gpus->size(); ++g) {
    std::vector<DrawnInstance> drawn;
    for (const auto& inst : (*gpus)[g].occupied.instances())
      drawn.push_back({inst.placement, inst.profile->name, "running", false, inst.profile->compute_slices});
    for (const auto& s : plan.slots)
      if (static_cast<std::size_t>(s.gpu) == g)
        drawn.push_back({s.placement, s.profile->name, "", true, s.profile->compute_slices});
    fmt::print("{}", draw_gpu(static_cast<int>(g), **model, drawn));
  }
  fmt::print("\nAdvertised to Slurm:");
  for (const auto& [name, n] : plan.counts()) fmt::print(" vgpu:{}:{}", name, n);
  fmt::print("\nDecisions:\n");
  for (const auto& n : plan.notes) fmt::print("  - {}\n", n);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "Explain what a node would advertise for a given occupancy and demand");
  cmd->add_option("--model", a->model, "GPU model of every GPU on the node")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "GPUs on the node")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--running", a->running, "Existing instances: GPU:PROFILE@START[/OWNER],...");
  cmd->add_option("--demand", a->demand, "Pending demand in priority order: PROFILE:COUNT,...");
  cmd->add_option("--starving", a->starving, "Demand profiles that waited past the starvation limit");
  cmd->add_option("--idle-layout", a->idle, "Profiles each GPU falls back to when demand is served");
  cmd->add_option("--allowed", a->allowed, "Profiles the partition allows (default: all)");
  cmd->add_flag("--json", a->json, "Machine-readable output");
  cmd->callback([a, &exit_code] { exit_code = run_plan(*a); });
}

}  // namespace vgpuctl
