// Pure locality rules over a Topology value: bus-id parsing, GPU lookup, list formatting.
#include "vgpu/locality/locality.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vgpu {
namespace {

// Exactly `digits` hex digits, nothing else.
bool parse_hex(std::string_view text, std::size_t digits, std::uint32_t& out) {
  if (text.size() != digits) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc{} && end == text.data() + text.size();
}

std::vector<unsigned> sorted_unique(std::vector<unsigned> v) {
  std::ranges::sort(v);
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string describe(const PciDevice& d) {
  return fmt::format("{} [{:04x}:{:04x}]", to_string(d.bus_id), d.vendor_id, d.device_id);
}

std::string gpu_inventory(const Topology& t) {
  std::string out;
  for (const auto& d : t.pci_devices) {
    if (!d.is_gpu()) continue;
    out += (out.empty() ? "" : ", ") + describe(d);
  }
  return out.empty() ? "none (no PCI device of class 03xx in the topology)" : out;
}

std::vector<unsigned> cores_touching(const Topology& t, const std::vector<unsigned>& pus) {
  const std::set<unsigned> wanted(pus.begin(), pus.end());
  std::vector<unsigned> cores;
  for (const auto& c : t.cores) {
    if (std::ranges::any_of(c.pus, [&](unsigned pu) { return wanted.contains(pu); })) cores.push_back(c.logical_index);
  }
  return sorted_unique(std::move(cores));
}

Result<GpuLocality> locality_of(const Topology& t, const PciDevice& d) {
  const std::string where = fmt::format("GPU {}", to_string(d.bus_id));
  if (d.ancestors.empty()) return fail(ErrorCode::corrupt, where + ": no CPU-side ancestor in the topology");
  GpuLocality loc;
  loc.bus_id = d.bus_id;
  loc.vendor_id = d.vendor_id;
  loc.device_id = d.device_id;
  const TopologyObject& nearest = d.ancestors.front();
  loc.numa_nodes = sorted_unique(nearest.numa_nodes);
  loc.numa_from = nearest.name();
  auto with_cpus = std::ranges::find_if(d.ancestors, [](const auto& a) { return !a.pus.empty(); });
  if (with_cpus == d.ancestors.end())
    return fail(ErrorCode::corrupt, where + ": no ancestor up to " + d.ancestors.back().name() + " has any CPU");
  loc.pus = sorted_unique(with_cpus->pus);
  loc.cpus_from = with_cpus->name();
  if (t.cores.empty()) {
    // Topologies without Core objects (some VMs, synthetic ones): each PU is its own core.
    loc.cores = loc.pus;
  } else {
    loc.cores = cores_touching(t, loc.pus);
  }
  return loc;
}

}  // namespace

Result<PciBusId> parse_pci_bus_id(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("PCI bus id '{}': {} (expected DDDD:BB:DD.F or DDDDDDDD:BB:DD.F)", text, why));
  };
  const auto colon1 = text.find(':');
  const auto colon2 = colon1 == std::string_view::npos ? colon1 : text.find(':', colon1 + 1);
  const auto dot = colon2 == std::string_view::npos ? colon2 : text.find('.', colon2 + 1);
  if (dot == std::string_view::npos) return bad("not in domain:bus:device.function form");
  const auto domain = text.substr(0, colon1);
  const auto bus = text.substr(colon1 + 1, colon2 - colon1 - 1);
  const auto dev = text.substr(colon2 + 1, dot - colon2 - 1);
  const auto fn = text.substr(dot + 1);
  std::uint32_t d = 0, b = 0, v = 0, f = 0;
  if (!parse_hex(domain, domain.size() == 8 ? 8 : 4, d)) return bad("domain must be 4 or 8 hex digits");
  if (!parse_hex(bus, 2, b)) return bad("bus must be 2 hex digits");
  if (!parse_hex(dev, 2, v) || v > 0x1f) return bad("device must be 2 hex digits, 00-1f");
  if (!parse_hex(fn, 1, f) || f > 7) return bad("function must be one digit, 0-7");
  return PciBusId{d, static_cast<std::uint8_t>(b), static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(f)};
}

std::string to_string(const PciBusId& id) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", id.domain, id.bus, id.device, id.function);
}

std::string TopologyObject::name() const { return fmt::format("{} L#{}", type, logical_index); }

std::string GpuLocality::core_list() const { return format_index_list(cores); }
std::string GpuLocality::pu_list() const { return format_index_list(pus); }

std::string format_index_list(std::span<const unsigned> indexes) {
  const auto ids = sorted_unique({indexes.begin(), indexes.end()});
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

Result<GpuLocality> locate_gpu(const Topology& topology, std::string_view bus_id) {
  auto id = parse_pci_bus_id(bus_id);
  if (!id) return std::unexpected(id.error());
  auto it = std::ranges::find_if(topology.pci_devices, [&](const PciDevice& d) { return d.bus_id == *id; });
  if (it == topology.pci_devices.end())
    return fail(ErrorCode::not_found, fmt::format("PCI bus id {}: not found in topology of {}; PCI GPUs present: {}",
                                                  to_string(*id), topology.source, gpu_inventory(topology)));
  if (!it->is_gpu())
    return fail(ErrorCode::invalid_argument,
                fmt::format("PCI bus id {}: device {:04x}:{:04x} is class {:04x}, not a GPU; "
                            "PCI GPUs present: {}",
                            to_string(*id), it->vendor_id, it->device_id, it->class_id, gpu_inventory(topology)));
  return within(locality_of(topology, *it), "topology of " + topology.source);
}

Result<std::vector<GpuLocality>> locate_all_gpus(const Topology& topology) {
  std::vector<const PciDevice*> gpus;
  for (const auto& d : topology.pci_devices)
    if (d.is_gpu()) gpus.push_back(&d);
  std::ranges::sort(gpus, {}, [](const PciDevice* d) { return d->bus_id; });
  std::vector<GpuLocality> out;
  for (const auto* d : gpus) {
    auto loc = locality_of(topology, *d);
    if (!loc) return std::unexpected(loc.error().within("topology of " + topology.source));
    out.push_back(std::move(*loc));
  }
  return out;
}

std::string to_json(const GpuLocality& l) {
  nlohmann::ordered_json j;
  j["bus_id"] = to_string(l.bus_id);
  j["pci_id"] = fmt::format("{:04x}:{:04x}", l.vendor_id, l.device_id);
  j["numa_nodes"] = l.numa_nodes;
  j["numa_from"] = l.numa_from;
  j["cores"] = l.core_list();
  j["pus"] = l.pu_list();
  j["pu_indexes"] = l.pus;
  j["cpus_from"] = l.cpus_from;
  return j.dump();
}

}  // namespace vgpu
