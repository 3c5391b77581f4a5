// The spellings of NVML's topology answers in a probe capture and a fake-NVML fixture: the probe
// writes them, the fake reads them, so a capture replays as it was recorded. nvml.h's own names.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "nvml_abi.h"

namespace vgpu::nvml {

inline constexpr std::array<std::pair<nvmlGpuTopologyLevel_t, std::string_view>, 6> kTopologyLevelNames{{
    {NVML_TOPOLOGY_INTERNAL, "NVML_TOPOLOGY_INTERNAL"},
    {NVML_TOPOLOGY_SINGLE, "NVML_TOPOLOGY_SINGLE"},
    {NVML_TOPOLOGY_MULTIPLE, "NVML_TOPOLOGY_MULTIPLE"},
    {NVML_TOPOLOGY_HOSTBRIDGE, "NVML_TOPOLOGY_HOSTBRIDGE"},
    {NVML_TOPOLOGY_NODE, "NVML_TOPOLOGY_NODE"},
    {NVML_TOPOLOGY_SYSTEM, "NVML_TOPOLOGY_SYSTEM"},
}};

inline constexpr std::array<std::pair<nvmlGpuP2PStatus_t, std::string_view>, 7> kP2pStatusNames{{
    {NVML_P2P_STATUS_OK, "NVML_P2P_STATUS_OK"},
    {NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED, "NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED"},
    {NVML_P2P_STATUS_GPU_NOT_SUPPORTED, "NVML_P2P_STATUS_GPU_NOT_SUPPORTED"},
    {NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED, "NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED"},
    {NVML_P2P_STATUS_DISABLED_BY_REGKEY, "NVML_P2P_STATUS_DISABLED_BY_REGKEY"},
    {NVML_P2P_STATUS_NOT_SUPPORTED, "NVML_P2P_STATUS_NOT_SUPPORTED"},
    {NVML_P2P_STATUS_UNKNOWN, "NVML_P2P_STATUS_UNKNOWN"},
}};

template <class Table>
std::string_view name_in(const Table& table, decltype(table[0].first) value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "unknown";
}

template <class Table>
std::optional<decltype(Table{}[0].first)> value_in(const Table& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace vgpu::nvml
