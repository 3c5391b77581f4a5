// AMD Instinct compute partitions through the amdgpu driver's sysfs attributes: the backend
// behind the same GpuBackend interface as NVML/MIG. A partition is an "instance": its id is the
// partition id, its placement the XCDs it spans, its UUID the one ROCm gives it ("GPU-<unique_id>",
// what ROCR_VISIBLE_DEVICES accepts), its device file the render node KFD names for it.
//
// The GPU runs one mode at a time and every partition of the mode exists while it is set, so:
// - create_instance switches the mode when the GPU is in another one (the driver refuses with
//   EBUSY while any process uses the GPU; the ledger's uniform rule means no job holds one), then
//   returns the partition at the placement, which now exists;
// - destroy_instance releases nothing in the hardware: a partition lives as long as its mode, and
//   the next mode switch (for a job that needs another profile) is what ends it.
// The memory-partition mode (NPS) is never changed here: the catalog assumes NPS1, and a GPU in
// another memory mode is reported and offered to nobody (docs/backends.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/sysfs/sysfs.h"

namespace vgpu::amdgpu {

struct Options {
  // How long a mode switch may take before create_instance gives up on seeing the new partitions.
  std::chrono::milliseconds switch_timeout{60000};
  std::chrono::milliseconds poll{20};
};

// One partition as KFD's topology describes it.
struct Partition {
  int id = 0;            // partition id (location_id bits 31:28)
  int render_minor = 0;  // /dev/dri/renderD<minor>
  std::string uuid;      // "GPU-<16 hex digits>"
  int xcc = 0;
};

class Backend final : public GpuBackend {
 public:
  Backend(Sysfs& sysfs, Options options = {});
  static std::unique_ptr<Backend> open(std::unique_ptr<Sysfs> sysfs, Options options = {});

  [[nodiscard]] std::string_view backend_name() const override { return "amdgpu"; }
  Result<std::vector<GpuInfo>> discover() override;
  [[nodiscard]] std::string unavailable_reason() const override { return unavailable_; }
  Result<GpuModel> read_catalog(int gpu) override;
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override;
  Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) override;
  Result<void> destroy_instance(int gpu, int gi_id) override;

  // The partitions of GPU `gpu` in its current mode, by id.
  Result<std::vector<Partition>> partitions(int gpu);

 private:
  struct Gpu {
    std::string bdf;
    const GpuModel* model = nullptr;
  };
  Result<void> scan();
  Result<Gpu> gpu_at(int gpu);
  Result<std::string> current_mode(const Gpu& g);
  Result<InstanceInfo> instance_of(int gpu, const Gpu& g, const std::string& mode, const Partition& p);

  std::unique_ptr<Sysfs> owned_;
  Sysfs& sysfs_;
  Options options_;
  std::vector<Gpu> gpus_;
  std::string unavailable_;
};

// "SPX" -> AmdPartitionMode::spx; nullopt for anything else.
std::optional<AmdPartitionMode> parse_mode(std::string_view text);
std::string_view mode_name(AmdPartitionMode mode);

}  // namespace vgpu::amdgpu
