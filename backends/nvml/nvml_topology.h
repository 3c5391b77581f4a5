// How a node's GPUs reach each other, as NVML answers it (query only): every pair's PCIe common
// ancestor and P2P status over NVLink and PCIe, every GPU's NVLinks and what each leads to. Raw for
// the probe's recording; links_of() turns it into what the whole-GPU placement chooses from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nvml_reader.h"
#include "vgpu/core/whole_gpu_placement.h"

namespace vgpu::nvml {

// An answer NVML refused with NOT_SUPPORTED (no NVLink, a pair it does not know) is absent; any
// other refusal is also in TopologyRead::errors.
struct PairRead {
  int a = 0, b = 0;
  std::optional<nvmlGpuTopologyLevel_t> common_ancestor;
  std::optional<nvmlGpuP2PStatus_t> p2p_nvlink, p2p_read;
};

struct LinkRead {
  unsigned link = 0;
  bool active = false;
  std::optional<std::string> remote_pci_bus_id;
};

struct GpuLinksRead {
  int gpu = 0;
  bool supported = false;  // false: nvmlDeviceGetNvLinkState answered NOT_SUPPORTED (no NVLink)
  std::vector<LinkRead> links;
};

struct TopologyRead {
  std::vector<PairRead> pairs;  // every pair a < b
  std::vector<GpuLinksRead> gpus;
  std::vector<Failure> errors;
};

TopologyRead read_topology(Reader& reader, int gpu_count);

// NVLink where P2P over NVLink is OK; PCIe levels where the common ancestor was answered.
GpuLinks links_of(const TopologyRead& read, int gpu_count);

}  // namespace vgpu::nvml
