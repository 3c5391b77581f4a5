// The NVML backend with mutations: create a GPU instance at a placement plus one compute instance
// spanning it, destroy them again, and switch a GPU's MIG mode. Only node-side programs (prolog,
// epilog, planner) link this.
#pragma once

#include <memory>

#include "nvml_reader.h"

namespace vgpu::nvml {

struct MutateApi {
  decltype(&nvmlDeviceCreateGpuInstanceWithPlacement) create_gi_with_placement = nullptr;
  decltype(&nvmlGpuInstanceCreateComputeInstance) create_ci = nullptr;
  decltype(&nvmlComputeInstanceDestroy) destroy_ci = nullptr;
  decltype(&nvmlGpuInstanceDestroy) destroy_gi = nullptr;
  decltype(&nvmlDeviceSetMigMode) set_mig_mode = nullptr;
};

class Backend : public GpuBackend {
 public:
  static std::unique_ptr<Backend> open(std::string library_path = {});

  [[nodiscard]] std::string_view backend_name() const override { return reader_->backend_name(); }
  Result<std::vector<GpuInfo>> discover() override { return reader_->discover(); }
  [[nodiscard]] std::string unavailable_reason() const override { return unavailable_; }
  Result<GpuModel> read_catalog(int gpu) override { return reader_->read_catalog(gpu); }
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override { return reader_->list_instances(gpu); }
  Result<std::vector<GpuProcess>> compute_processes(int gpu) override { return reader_->compute_processes(gpu); }
  std::unique_ptr<ActivitySampler> activity_sampler() override { return reader_->activity_sampler(); }
  // Read once: links between GPUs do not change while the node runs (a MIG-mode switch may
  // rebind a GPU, its NVLinks stay).
  std::optional<GpuLinks> gpu_links() override;
  Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) override;
  Result<void> destroy_instance(int gpu, int gi_id) override;
  Result<MigModeSwitch> set_mig_mode(int gpu, MigMode mode) override;

  [[nodiscard]] Reader& reader() { return *reader_; }

 private:
  Backend() = default;
  std::unique_ptr<Reader> reader_;
  MutateApi api_;
  bool usable_ = false;
  std::string unavailable_;
  std::optional<GpuLinks> links_;
};

// NVML_COMPUTE_INSTANCE_PROFILE_* for a compute instance of `slices` compute slices.
std::optional<unsigned> ci_profile_index_for_slices(unsigned slices);

}  // namespace vgpu::nvml
