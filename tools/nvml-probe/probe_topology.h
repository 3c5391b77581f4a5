// The probe's topology section, in the spelling the fake NVML replays (nvml_topology_names.h):
//   "topology": {"pairs": [{"gpus": [0, 1], "common_ancestor": "NVML_TOPOLOGY_NODE",
//                           "p2p_nvlink": "NVML_P2P_STATUS_OK", "p2p_read": "NVML_P2P_STATUS_OK"}]}
// and per GPU with NVLink "nvlinks": [{"link": 0, "active": true, "remote_pci_bus_id": "..."}].
// An answer NVML refused is null (or, for a GPU without NVLink, no "nvlinks" at all).
#pragma once

#include <nlohmann/json.hpp>

#include "nvml_topology.h"

namespace vgpu::probe {

nlohmann::json pairs_json(const nvml::TopologyRead& read);
// Null for a GPU that answered the NVLink queries NOT_SUPPORTED.
nlohmann::json nvlinks_json(const nvml::GpuLinksRead& links);

// What choose_whole_gpus gives a request for each count with all `gpu_count` GPUs free:
//   [{"count": 2, "gpus": [0, 1], "one_nvlink_domain": true}, {"count": 4, "gpus": null}]
nlohmann::json whole_gpu_choices(const nvml::TopologyRead& read, int gpu_count, const std::vector<int>& counts);

}  // namespace vgpu::probe
