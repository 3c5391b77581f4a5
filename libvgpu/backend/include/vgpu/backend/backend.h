// The partitioning-backend interface: one small interface, many backends (NVML/MIG now; vGPU
// mdev, SR-IOV, AMD MxGPU later), in the spirit of NVIDIA mig-parted. Everything here is
// hardware-neutral; a backend translates its device API into these values.
//
// Reading and changing are separate interfaces on purpose: tools that must never change a GPU
// (the probe run on production nodes) are handed a GpuReader and cannot reach a mutation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/core/whole_gpu_placement.h"
#include "vgpu/base/error.h"

namespace vgpu {

enum class MigMode { disabled, enabled, unsupported };
std::string_view to_string(MigMode mode);

// What asking a GPU for a MIG mode did. The request always becomes the GPU's pending mode; the
// mode is current only once activated (nvml.h, nvmlDeviceSetMigMode).
enum class MigModeSwitch {
  activated,               // the GPU runs in the new mode now
  pending_in_use,          // a process or an instance holds the GPU: idle it and ask again
  pending_reset_required,  // takes effect at the next GPU reset (A100/A30, pass-through VMs)
};
std::string_view to_string(MigModeSwitch outcome);

struct GpuInfo {
  int index = 0;             // the backend's device index (NVML index)
  std::string product_name;  // as the device reports it: "NVIDIA H100 80GB HBM3"
  std::string uuid;          // "GPU-..."
  std::string pci_bus_id;    // "00000000:00:06.0"
  int memory_mib = 0;
  MigMode mig_current = MigMode::unsupported;
  MigMode mig_pending = MigMode::unsupported;
  int minor = -1;  // /dev/nvidia<minor>
};

// One GPU instance and (if it has one) the compute instance that spans it. The product always
// creates exactly one CI per GI, but listing reports what is there, including a GI without a CI.
struct InstanceInfo {
  int gpu = 0;
  int gi_id = 0;
  std::optional<int> ci_id;
  int profile_id = 0;  // GPU-instance profile id (nvmlGpuInstanceProfileInfo.id)
  Placement placement;
  std::string mig_uuid;  // "MIG-..."; empty while the GI has no CI
  std::string profile;   // profile name as the device reports it, "MIG " dropped: "3g.40gb"
  bool operator==(const InstanceInfo&) const = default;
};

// What a job needs to use one instance: CUDA_VISIBLE_DEVICES and the cgroup device allow-list.
struct JobDevices {
  std::string mig_uuid;
  std::vector<std::string> device_files;
};

// A process with a compute context on a GPU: what makes an instance nobody recorded "in use".
struct GpuProcess {
  int pid = 0;
  std::optional<int> gi_id;  // the GPU instance it runs in; none on a GPU with MIG off
  bool operator==(const GpuProcess&) const = default;
};

// GPUs and instances of a node at one moment: the input to the ledger's rebuild from hardware.
struct NodeSnapshot {
  std::string backend;
  std::vector<GpuInfo> gpus;
  std::vector<InstanceInfo> instances;
  std::vector<std::string> notes;  // why the list may be short ("NVML library not found: ...")
};

// What one GPU instance (or a whole GPU without MIG) did between two samples. Each value is
// absent where the hardware does not give it (no GPM before Hopper; the first sample of a scope).
struct ActivityReading {
  int gpu = 0;
  std::optional<int> gi_id;  // empty: the whole GPU
  std::string uuid;          // "MIG-..." for an instance, "GPU-..." for a whole GPU
  double interval_seconds = 0;
  std::optional<double> sm_utilization;              // 0..1, fraction of the scope's SMs busy
  std::optional<double> dram_bandwidth_utilization;  // 0..1 of the scope's DRAM bandwidth
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
};

struct ActivitySample {
  std::vector<ActivityReading> readings;
  // Calls that failed this time ("nvmlGpmMigSampleGet(gpu 0, gi 3): Not Found"): counted by the
  // planner's metrics, never fatal.
  std::vector<std::string> errors;
  int gpus_without_support = 0;  // GPUs whose hardware has no per-instance counters
};

// Samples utilisation counters; each call reports the interval since the previous one, so the
// sampler keeps the previous snapshot of every scope. Read-only.
class ActivitySampler {
 public:
  virtual ~ActivitySampler() = default;
  virtual ActivitySample sample() = 0;
};

class GpuReader {
 public:
  virtual ~GpuReader() = default;
  [[nodiscard]] virtual std::string_view backend_name() const = 0;
  // An empty list with a note when the driver is absent: a node without GPUs is not an error.
  virtual Result<std::vector<GpuInfo>> discover() = 0;
  // Why discover() may be empty; empty when the backend is usable.
  [[nodiscard]] virtual std::string unavailable_reason() const = 0;
  // The profile catalog and legal placements as the device reports them, for compare_models().
  virtual Result<GpuModel> read_catalog(int gpu) = 0;
  virtual Result<std::vector<InstanceInfo>> list_instances(int gpu) = 0;
  // Null where the backend has no utilisation counters.
  virtual std::unique_ptr<ActivitySampler> activity_sampler() { return nullptr; }
  // Whether list_instances answers for a GPU whose MIG mode is off, with the whole GPU as its one
  // instance (whole_gpus.h); a plain backend has no instances there and is not asked.
  [[nodiscard]] virtual bool lists_whole_gpus() const { return false; }
  // How the GPUs reach each other (NVLink, PCIe), for choosing a multi-GPU job's whole GPUs
  // (vgpu/core/whole_gpu_placement.h); nullopt where the backend cannot tell, and the choice then
  // goes by index.
  virtual std::optional<GpuLinks> gpu_links() { return std::nullopt; }
  // The processes with a compute context on `gpu`, every instance's. Code `unavailable` where
  // the backend (or its driver) cannot tell: the caller must then not take "none listed" for idle.
  virtual Result<std::vector<GpuProcess>> compute_processes(int gpu);
};

class GpuBackend : public GpuReader {
 public:
  // A GPU instance of `profile_id` at exactly `placement`, plus one compute instance spanning it.
  // If the CI cannot be created the GI is destroyed again, so a failure leaves nothing behind.
  virtual Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) = 0;
  // Destroys the GI's compute instances, then the GI.
  virtual Result<void> destroy_instance(int gpu, int gi_id) = 0;
  // Asks for MIG mode `mode` (enabled or disabled). The driver may unbind the GPU to activate it,
  // so its attributes (the minor number among them) are read again after an activation. A backend
  // whose GPUs have no MIG mode answers `unavailable`.
  virtual Result<MigModeSwitch> set_mig_mode(int gpu, MigMode mode);
};

Result<NodeSnapshot> take_snapshot(GpuReader& reader);

}  // namespace vgpu
