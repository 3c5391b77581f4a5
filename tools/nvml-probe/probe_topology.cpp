#include "probe_topology.h"

#include "nvml_topology_names.h"

namespace vgpu::probe {
namespace {

using nlohmann::json;

template <class Table, class T>
json named(const Table& table, const std::optional<T>& value) {
  return value ? json(std::string(nvml::name_in(table, *value))) : json(nullptr);
}

}  // namespace

json pairs_json(const nvml::TopologyRead& read) {
  json pairs = json::array();
  for (const auto& p : read.pairs)
    pairs.push_back({{"gpus", {p.a, p.b}},
                     {"common_ancestor", named(nvml::kTopologyLevelNames, p.common_ancestor)},
                     {"p2p_nvlink", named(nvml::kP2pStatusNames, p.p2p_nvlink)},
                     {"p2p_read", named(nvml::kP2pStatusNames, p.p2p_read)}});
  return {{"pairs", pairs}};
}

json whole_gpu_choices(const nvml::TopologyRead& read, int gpu_count, const std::vector<int>& counts) {
  const auto links = nvml::links_of(read, gpu_count);
  std::vector<int> all;
  for (int g = 0; g < gpu_count; ++g) all.push_back(g);
  json out = json::array();
  for (int count : counts) {
    auto choice = choose_whole_gpus(links, all, count);
    out.push_back({{"count", count},
                   {"gpus", choice ? json(choice->gpus) : json(nullptr)},
                   {"one_nvlink_domain", choice ? json(choice->one_nvlink_domain) : json(nullptr)}});
  }
  return out;
}

json nvlinks_json(const nvml::GpuLinksRead& links) {
  if (!links.supported) return nullptr;
  json out = json::array();
  for (const auto& l : links.links)
    out.push_back({{"link", l.link},
                   {"active", l.active},
                   {"remote_pci_bus_id", l.remote_pci_bus_id ? json(*l.remote_pci_bus_id) : json(nullptr)}});
  return out;
}

}  // namespace vgpu::probe
