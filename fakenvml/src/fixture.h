// The fake's description of a node's GPUs: a fixture file (hand-written, generated, or recorded on
// real hardware by vgpu-nvml-probe). Nothing here comes from libvgpu's built-in catalog, so
// comparing the NVML backend's read against that catalog is a real check.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nvml_abi.h"

namespace fakenvml {

// A recorded NVML failure: the fake answers the call with this code, as the device did.
struct RecordedError {
  nvmlReturn_t code = NVML_ERROR_UNKNOWN;
};

struct GiProfile {
  unsigned index = 0;
  std::optional<RecordedError> error;  // info query failed on the recorded device
  unsigned id = 0;
  std::string name;
  unsigned slice_count = 0, instance_count = 0, multiprocessor_count = 0;
  unsigned copy_engine_count = 0, decoder_count = 0, encoder_count = 0, jpeg_count = 0, ofa_count = 0,
           is_p2p_supported = 0;
  unsigned long long memory_size_mib = 0;
  std::vector<nvmlGpuInstancePlacement_t> placements;
  std::optional<RecordedError> placements_error;
};

struct CiProfile {
  unsigned index = 0;
  unsigned id = 0;
  unsigned slice_count = 0;
  unsigned multiprocessor_count = 0;
};

enum class Mig { disabled, enabled, unsupported };

// One NVLink of a GPU as nvmlDeviceGetNvLinkState / _RemotePciInfo_v2 answered it.
struct NvLink {
  unsigned link = 0;
  bool active = false;
  std::string remote_pci_bus_id;  // empty: the query failed on the recorded device
};

// How two GPUs reach each other: nvmlDeviceGetTopologyCommonAncestor and nvmlDeviceGetP2PStatus
// for the NVLink and PCIe-read capabilities. Empty: the query failed on the recorded device.
struct GpuPairTopology {
  unsigned a = 0, b = 0;
  std::optional<nvmlGpuTopologyLevel_t> common_ancestor;
  std::optional<nvmlGpuP2PStatus_t> p2p_nvlink, p2p_read;
};

struct Gpu {
  std::string name, uuid, pci_bus_id;
  unsigned pci_device_id = 0;  // (device << 16) | vendor
  unsigned long long memory_mib = 0;
  unsigned minor = 0;
  Mig mig_current = Mig::unsupported, mig_pending = Mig::unsupported;
  std::vector<GiProfile> gi_profiles;
  std::vector<CiProfile> ci_profiles;  // derived from the GI profiles when the fixture has none
  unsigned compute_slices = 0;         // largest GI profile's slice count
  unsigned memory_slices = 0;          // widest placement end
  bool gpm_supported = false;          // GPM counters: Hopper and newer (gpm_supported_by_name)
  // Absent from the fixture: the GPU answers the NVLink queries NOT_SUPPORTED, as a PCIe card does.
  std::optional<std::vector<NvLink>> nvlinks;
};

// NVML's GPM exists on Hopper and newer only (nvmlGpmQueryDeviceSupport); fixtures carry the
// product name, so the architecture is read from it.
bool gpm_supported_by_name(const std::string& product_name);

struct Fixture {
  std::string driver_version;
  std::vector<Gpu> gpus;
  std::vector<GpuPairTopology> pairs;  // a pair not listed answers NOT_SUPPORTED
};

// Strict: unknown keys and wrong types are errors naming the JSON path. Accepts format
// "vgpu-nvml-fixture" and "vgpu-nvml-probe" (the probe's output, whose extra report keys are
// skipped), both version 1.
std::optional<Fixture> load_fixture(const std::string& path, std::string& error);

}  // namespace fakenvml
