#include "gpu_locality.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "vgpu/locality/locality.h"

namespace vgpu::viz {

CpuLocator make_cpu_locator(const std::string& topology) {
  if (topology.empty()) return {};
  auto loaded = std::make_shared<std::optional<Topology>>();
  return [topology, loaded](const std::string& pci_address) -> Result<std::string> {
    if (!loaded->has_value()) {
      auto t = load_topology(topology == "live" ? std::nullopt : std::optional<std::string>(topology));
      if (!t) return std::unexpected(t.error().within(fmt::format("topology {}", topology)));
      *loaded = std::move(*t);
    }
    auto gpu = locate_gpu(**loaded, pci_address);
    if (!gpu) return std::unexpected(gpu.error());
    if (gpu->pus.empty())
      return fail(ErrorCode::not_found, fmt::format("GPU {}: no CPUs near it in {}", pci_address, (*loaded)->source));
    return gpu->pu_list();
  };
}

}  // namespace vgpu::viz
