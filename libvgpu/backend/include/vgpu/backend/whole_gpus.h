// The whole GPU as an instance. A GPU of a MIG model whose MIG mode is off, or a GPU without MIG, is one CUDA device
// with all of its memory, SMs, NVLink and peer-to-peer paths: a job that asks for `whole.<M>gb`
// gets the GPU itself. No driver call makes or removes it; it exists exactly while MIG mode is
// off, as an AMD partition exists while its GPU's mode is set. This decorator gives every backend
// that view through the one GpuBackend interface, so the prolog, the epilog, reconcile and the
// ledger treat a whole GPU like any instance:
//   list_instances: a GPU with MIG off lists itself, GPU instance 0, UUID "GPU-...", the
//     catalog's whole.<M>gb profile (kWholeGpuProfileId) on every slice;
//   create_instance(gpu, kWholeGpuProfileId, every slice): that same instance, refused while MIG
//     mode is on (the GPU is then no single CUDA device);
//   destroy_instance on a GPU with MIG off: nothing to do, the GPU stays;
//   compute_processes: a whole GPU's processes run in its GPU instance 0;
//   everything else goes to the wrapped backend.
#pragma once

#include <memory>

#include "vgpu/backend/backend.h"

namespace vgpu {

// Whether a GPU of `model` is, right now, its whole GPU: a model without MIG always, a MIG model
// while its MIG mode is off (a pending switch counts as what is current).
[[nodiscard]] bool is_whole_now(const GpuInfo& gpu, const GpuModel& model);

// The whole GPU `gpu` as an instance, or nullopt when it has none: not whole now (is_whole_now),
// or a model without a whole-GPU profile (AMD, an unknown product).
std::optional<InstanceInfo> whole_gpu_instance(const GpuInfo& gpu, const Catalog& catalog);

class WholeGpuBackend final : public GpuBackend {
 public:
  WholeGpuBackend(std::unique_ptr<GpuBackend> inner, const Catalog& catalog)
      : owned_(std::move(inner)), inner_(owned_.get()), catalog_(catalog) {}
  // Over a backend the caller keeps (a test's double).
  WholeGpuBackend(GpuBackend& inner, const Catalog& catalog) : inner_(&inner), catalog_(catalog) {}

  [[nodiscard]] std::string_view backend_name() const override { return inner_->backend_name(); }
  Result<std::vector<GpuInfo>> discover() override { return inner_->discover(); }
  [[nodiscard]] std::string unavailable_reason() const override { return inner_->unavailable_reason(); }
  Result<GpuModel> read_catalog(int gpu) override { return inner_->read_catalog(gpu); }
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override;
  std::unique_ptr<ActivitySampler> activity_sampler() override { return inner_->activity_sampler(); }
  [[nodiscard]] bool lists_whole_gpus() const override { return true; }
  std::optional<GpuLinks> gpu_links() override { return inner_->gpu_links(); }
  Result<std::vector<GpuProcess>> compute_processes(int gpu) override;

  Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) override;
  Result<void> destroy_instance(int gpu, int gi_id) override;
  Result<MigModeSwitch> set_mig_mode(int gpu, MigMode mode) override { return inner_->set_mig_mode(gpu, mode); }

 private:
  Result<GpuInfo> gpu_info(int gpu);

  std::unique_ptr<GpuBackend> owned_;
  GpuBackend* inner_;
  const Catalog& catalog_;
};

}  // namespace vgpu
