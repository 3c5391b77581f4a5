#include "vgpu/node/mig_mode_switch.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace vgpu {
namespace {

bool asked_by_policy(MigModePolicy mode, const GpuInfo& gpu, const GpuModel& model,
                     std::span<const PartitionPolicy* const> parts) {
  return std::ranges::any_of(parts, [&](const PartitionPolicy* p) {
    return p->mig_mode == mode && p->allows_gpu(gpu.index) && p->uses_model(model);
  });
}

bool holds_anything_of_ours(const Ledger& ledger, int gpu) {
  return std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) { return i.gpu == gpu; }) ||
         std::ranges::any_of(ledger.plan.slots, [&](const PlanSlot& s) { return s.gpu == gpu; });
}

const GpuModel* switchable_model(const GpuInfo& gpu, const Catalog& catalog) {
  const GpuModel* model = catalog.find_model_for_product(gpu.product_name);
  if (!model || model->partitioning != Partitioning::mig || gpu.mig_current == MigMode::unsupported) return nullptr;
  return model;
}

// A partition that uses the GPU says "on_demand" and none fixes its mode (a fixed mode wins).
bool steered_by_demand(const GpuInfo& gpu, const GpuModel& model, std::span<const PartitionPolicy* const> parts) {
  return asked_by_policy(MigModePolicy::on_demand, gpu, model, parts) &&
         !asked_by_policy(MigModePolicy::partitioned, gpu, model, parts) &&
         !asked_by_policy(MigModePolicy::whole, gpu, model, parts);
}

std::string reset_note(const GpuInfo& gpu, const GpuModel& model, std::string_view asked) {
  return fmt::format("GPU {} ({}): mig_mode {}, but {} takes a new MIG mode only at a GPU reset: left with MIG {}",
                     gpu.index, model.name, asked, model.name, gpu.mig_current == MigMode::enabled ? "on" : "off");
}

}  // namespace

std::set<int> gpus_on_demand(const NodeSnapshot& snapshot, const Catalog& catalog,
                             std::span<const PartitionPolicy* const> parts, std::vector<std::string>& notes) {
  std::set<int> out;
  for (const auto& gpu : snapshot.gpus) {
    const GpuModel* model = switchable_model(gpu, catalog);
    if (!model || !steered_by_demand(gpu, *model, parts)) continue;
    if (model->mig_switch_needs_reset) notes.push_back(reset_note(gpu, *model, "on_demand"));
    else
      out.insert(gpu.index);
  }
  return out;
}

MigModeChoice choose_mig_mode_switches(const NodeSnapshot& snapshot, const Catalog& catalog,
                                       std::span<const PartitionPolicy* const> parts, const Ledger& ledger,
                                       const MigModeTargets& on_demand) {
  MigModeChoice out;
  for (const auto& gpu : snapshot.gpus) {
    const GpuModel* model = switchable_model(gpu, catalog);
    if (!model) continue;
    const bool fixed_partitioned = asked_by_policy(MigModePolicy::partitioned, gpu, *model, parts);
    const bool fixed_whole = !fixed_partitioned && asked_by_policy(MigModePolicy::whole, gpu, *model, parts);
    const bool demand_steers = !model->mig_switch_needs_reset && steered_by_demand(gpu, *model, parts);
    const bool partitioned = fixed_partitioned || (demand_steers && on_demand.partitioned.contains(gpu.index));
    const bool whole = fixed_whole || (demand_steers && on_demand.whole.contains(gpu.index));
    if (partitioned) out.wanted_partitioned.insert(gpu.index);
    if (whole) out.wanted_whole.insert(gpu.index);
    if (demand_steers && (partitioned || whole)) out.for_demand.insert(gpu.index);
    const bool mig_on = gpu.mig_current == MigMode::enabled;
    if (!(partitioned && !mig_on) && !(whole && mig_on)) continue;
    const std::string_view asked = demand_steers ? "on_demand" : partitioned ? "partitioned" : "whole";
    if (model->mig_switch_needs_reset) {
      out.notes.push_back(reset_note(gpu, *model, asked));
    } else if (holds_anything_of_ours(ledger, gpu.index)) {
      out.notes.push_back(
          fmt::format("GPU {} ({}): mig_mode {}, but the ledger still has an instance or a slot on "
                      "it: switched once it is empty",
                      gpu.index, model->name, asked));
    } else {
      (mig_on ? out.turn_off : out.turn_on).push_back(gpu.index);
    }
  }
  return out;
}

}  // namespace vgpu
