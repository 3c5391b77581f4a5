// vgpu-locality [--xml FILE] [BUSID...]: prints each GPU's NUMA nodes and closest cores as JSON,
// for writing gres.conf Cores= lines and VM vCPU pinning. No bus id: every PCI GPU.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vgpu/locality/locality.h"

int main(int argc, char** argv) {
  CLI::App app{"Print the NUMA node(s) and closest cores of GPUs, from hwloc, as JSON"};
  std::string xml;
  std::vector<std::string> bus_ids;
  app.add_option("--xml", xml, "read an `lstopo --of xml` export instead of this machine");
  app.add_option("busid", bus_ids, "PCI bus ids (0000:00:06.0 or NVML's 00000000:00:06.0)");
  CLI11_PARSE(app, argc, argv);

  auto topology = vgpu::load_topology(xml.empty() ? std::nullopt : std::optional<std::string>(xml));
  if (!topology) {
    fmt::print(stderr, "vgpu-locality: {}\n", topology.error().message);
    return 1;
  }
  std::vector<vgpu::GpuLocality> found;
  if (bus_ids.empty()) {
    auto all = vgpu::locate_all_gpus(*topology);
    if (!all) {
      fmt::print(stderr, "vgpu-locality: {}\n", all.error().message);
      return 1;
    }
    found = std::move(*all);
  }
  for (const auto& id : bus_ids) {
    auto loc = vgpu::locate_gpu(*topology, id);
    if (!loc) {
      fmt::print(stderr, "vgpu-locality: {}\n", loc.error().message);
      return 1;
    }
    found.push_back(std::move(*loc));
  }
  nlohmann::ordered_json out;
  out["source"] = topology->source;
  out["gpus"] = nlohmann::ordered_json::array();
  for (const auto& loc : found) out["gpus"].push_back(nlohmann::ordered_json::parse(vgpu::to_json(loc)));
  fmt::print("{}\n", out.dump());
  return 0;
}
