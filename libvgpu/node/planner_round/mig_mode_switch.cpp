#include "vgpu/node/mig_mode_switch.h"

#include <fmt/format.h>

#include <algorithm>

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

}  // namespace

MigModeChoice choose_mig_mode_switches(const NodeSnapshot& snapshot, const Catalog& catalog,
                                       std::span<const PartitionPolicy* const> parts, const Ledger& ledger) {
  MigModeChoice out;
  for (const auto& gpu : snapshot.gpus) {
    const GpuModel* model = catalog.find_model_for_product(gpu.product_name);
    if (!model || model->partitioning != Partitioning::mig || gpu.mig_current == MigMode::unsupported) continue;
    const bool partitioned = asked_by_policy(MigModePolicy::partitioned, gpu, *model, parts);
    const bool whole = !partitioned && asked_by_policy(MigModePolicy::whole, gpu, *model, parts);
    if (partitioned) out.wanted_partitioned.insert(gpu.index);
    if (whole) out.wanted_whole.insert(gpu.index);
    const bool mig_on = gpu.mig_current == MigMode::enabled;
    if (!(partitioned && !mig_on) && !(whole && mig_on)) continue;
    const std::string_view asked = partitioned ? "partitioned" : "whole";
    const std::string_view kept = mig_on ? "on" : "off";
    if (model->mig_switch_needs_reset) {
      out.notes.push_back(
          fmt::format("GPU {} ({}): mig_mode {}, but {} takes a new MIG mode only at a GPU reset: "
                      "left with MIG {}",
                      gpu.index, model->name, asked, model->name, kept));
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
