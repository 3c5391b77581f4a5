#include "vgpu/node/mig_mode_switch.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpu {
namespace {

bool partitioned_by_policy(const GpuInfo& gpu, const GpuModel& model, std::span<const PartitionPolicy* const> parts) {
  return std::ranges::any_of(parts, [&](const PartitionPolicy* p) {
    return p->mig_mode == MigModePolicy::partitioned && p->allows_gpu(gpu.index) && p->uses_model(model);
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
    if (!model || model->partitioning != Partitioning::mig || gpu.mig_current != MigMode::disabled) continue;
    if (!partitioned_by_policy(gpu, *model, parts)) continue;
    if (model->mig_switch_needs_reset) {
      out.notes.push_back(
          fmt::format("GPU {} ({}): mig_mode partitioned, but {} takes a new MIG mode only at a "
                      "GPU reset: left with MIG off",
                      gpu.index, model->name, model->name));
    } else if (holds_anything_of_ours(ledger, gpu.index)) {
      out.notes.push_back(
          fmt::format("GPU {} ({}): mig_mode partitioned, but the ledger still has an instance or "
                      "a slot on it: switched once it is empty",
                      gpu.index, model->name));
    } else {
      out.turn_on.push_back(gpu.index);
    }
  }
  return out;
}

}  // namespace vgpu
