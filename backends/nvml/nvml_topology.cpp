#include "nvml_topology.h"

#include <fmt/format.h>

namespace vgpu::nvml {
namespace {

// The answer, absent on NOT_SUPPORTED; other refusals recorded.
template <class T>
std::optional<T> answer(Reader& reader, TopologyRead& out, nvmlReturn_t rc, T value, const std::string& call) {
  if (rc == NVML_SUCCESS) return value;
  if (rc != NVML_ERROR_NOT_SUPPORTED) out.errors.push_back(reader.library()->failure(call, rc));
  return std::nullopt;
}

PairRead read_pair(Reader& reader, TopologyRead& out, int a, int b, nvmlDevice_t da, nvmlDevice_t db) {
  const auto& api = reader.api();
  PairRead p{a, b, {}, {}, {}};
  auto call = [&](const char* name) { return fmt::format("{}(gpu {}, gpu {})", name, a, b); };
  // Each call before its answer is read: argument evaluation order is unspecified.
  nvmlGpuTopologyLevel_t level{};
  nvmlReturn_t rc = api.device_get_topology_common_ancestor(da, db, &level);
  p.common_ancestor = answer(reader, out, rc, level, call("nvmlDeviceGetTopologyCommonAncestor"));
  nvmlGpuP2PStatus_t nvlink{}, read{};
  rc = api.device_get_p2p_status(da, db, NVML_P2P_CAPS_INDEX_NVLINK, &nvlink);
  p.p2p_nvlink = answer(reader, out, rc, nvlink, call("nvmlDeviceGetP2PStatus[NVLINK]"));
  rc = api.device_get_p2p_status(da, db, NVML_P2P_CAPS_INDEX_READ, &read);
  p.p2p_read = answer(reader, out, rc, read, call("nvmlDeviceGetP2PStatus[READ]"));
  return p;
}

GpuLinksRead read_links(Reader& reader, TopologyRead& out, int gpu, nvmlDevice_t dev) {
  const auto& api = reader.api();
  GpuLinksRead g{gpu, false, {}};
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t state{};
    auto where = fmt::format("(gpu {}, link {})", gpu, link);
    nvmlReturn_t rc = api.device_get_nvlink_state(dev, link, &state);
    auto active = answer(reader, out, rc, state, "nvmlDeviceGetNvLinkState" + where);
    if (!active) continue;
    g.supported = true;
    LinkRead l{link, *active == NVML_FEATURE_ENABLED, {}};
    nvmlPciInfo_t pci{};
    if (l.active) {
      rc = api.device_get_nvlink_remote_pci_info(dev, link, &pci);
      if (answer(reader, out, rc, true, "nvmlDeviceGetNvLinkRemotePciInfo_v2" + where)) {
        pci.busId[sizeof pci.busId - 1] = '\0';
        l.remote_pci_bus_id = pci.busId;
      }
    }
    g.links.push_back(std::move(l));
  }
  return g;
}

}  // namespace

TopologyRead read_topology(Reader& reader, int gpu_count) {
  TopologyRead out;
  std::vector<nvmlDevice_t> devices;
  for (int g = 0; g < gpu_count; ++g) {
    auto dev = reader.device(g);
    if (!dev) return out;  // discover() reported this already
    devices.push_back(*dev);
  }
  auto at = [&](int g) { return devices[static_cast<std::size_t>(g)]; };
  for (int g = 0; g < gpu_count; ++g) out.gpus.push_back(read_links(reader, out, g, at(g)));
  for (int a = 0; a < gpu_count; ++a)
    for (int b = a + 1; b < gpu_count; ++b) out.pairs.push_back(read_pair(reader, out, a, b, at(a), at(b)));
  return out;
}

GpuLinks links_of(const TopologyRead& read, int gpu_count) {
  GpuLinks links;
  links.gpu_count = gpu_count;
  for (const auto& p : read.pairs) {
    if (p.p2p_nvlink == NVML_P2P_STATUS_OK) links.nvlink.insert({p.a, p.b});
    if (p.common_ancestor) links.pcie_level.push_back({{p.a, p.b}, static_cast<int>(*p.common_ancestor)});
  }
  return links;
}

}  // namespace vgpu::nvml
