// The host CPUs next to a session's GPU, so its vCPUs can be pinned there (VizConfig::topology).
// The topology comes from hwloc through the locality adapter (backends/hwloc), loaded once, on
// first use: a node without pinning configured never touches hwloc.
#pragma once

#include <functional>
#include <string>

#include "vgpu/base/error.h"

namespace vgpu::viz {

// PCI address of a GPU ("0000:17:00.0") -> its local CPUs as a cpuset list ("0-15,32-47").
using CpuLocator = std::function<Result<std::string>(const std::string& pci_address)>;

// "" -> an empty locator (no pinning); "live" -> this machine; else an `lstopo --of xml` file.
CpuLocator make_cpu_locator(const std::string& topology);

}  // namespace vgpu::viz
