// Where a GPU sits relative to CPUs and memory: its NUMA node(s) and closest cores, from hwloc.
// Slurm's gres.conf `Cores=` wants logical core indexes (hwloc "Core L#", what `lstopo -l` shows);
// libvirt vCPU pinning wants OS CPU numbers (hwloc PU "P#"). Both come from one lookup.
//
// The Topology value is plain data so the lookup rules are unit-testable without hwloc; the
// hwloc adapter (backends/hwloc, target vgpu_locality) is the only code that fills it.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu {

// A PCI address. NVML spells it "00000000:00:06.0" (8-digit domain), sysfs/hwloc "0000:00:06.0".
struct PciBusId {
  std::uint32_t domain = 0;
  std::uint8_t bus = 0;
  std::uint8_t device = 0;    // 0..31
  std::uint8_t function = 0;  // 0..7
  auto operator<=>(const PciBusId&) const = default;
};

// Accepts a 4- or 8-hex-digit domain, either case; rejects anything else with the offending text.
Result<PciBusId> parse_pci_bus_id(std::string_view text);
// Canonical sysfs form, lower case: "0000:00:06.0".
std::string to_string(const PciBusId& id);

// A CPU-side (non-I/O) topology object: Machine, Package, Group, Die...
struct TopologyObject {
  std::string type;                        // hwloc type name: "Machine", "Package", "Group"
  unsigned logical_index = 0;              // hwloc L#
  std::vector<unsigned> pus;               // OS indexes of the PUs it contains, ascending
  std::vector<unsigned> numa_nodes;        // OS indexes of its NUMA nodes (its nodeset), ascending
  [[nodiscard]] std::string name() const;  // "Package L#1"
};

struct PciDevice {
  PciBusId bus_id;
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::uint16_t class_id = 0;             // 0x0302 = 3D controller
  std::vector<TopologyObject> ancestors;  // non-I/O ancestors, nearest first, root last
  // Display controllers (class 03xx): VGA, XGA, 3D. Data-centre NVIDIA GPUs are 0302.
  [[nodiscard]] bool is_gpu() const { return (class_id >> 8) == 0x03; }
};

struct Core {
  unsigned logical_index = 0;  // hwloc Core L#, the index Slurm's Cores= uses
  std::vector<unsigned> pus;   // OS indexes of its hardware threads
};

struct Topology {
  std::string source;  // "XML file /path" or "this machine", for error messages
  std::vector<PciDevice> pci_devices;
  std::vector<Core> cores;  // every core, in logical order
};

struct GpuLocality {
  PciBusId bus_id;
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::vector<unsigned> numa_nodes;             // the GPU's local NUMA nodes (nearest ancestor's nodeset)
  std::string numa_from;                        // the object they came from: "Group L#2"
  std::vector<unsigned> cores;                  // logical core indexes (Slurm Cores=)
  std::vector<unsigned> pus;                    // OS PU indexes (virsh vcpupin / taskset)
  std::string cpus_from;                        // the object the CPUs came from; differs from numa_from when
                                                // the nearest ancestor has no CPUs (memory-only NUMA domain)
  [[nodiscard]] std::string core_list() const;  // "0-15,32-47"
  [[nodiscard]] std::string pu_list() const;
};

// Finds the GPU at `bus_id` and derives its locality. NUMA nodes come from its nearest non-I/O
// ancestor; CPUs from the nearest ancestor that has any, so a GPU in a CPU-less domain is bound to
// the CPUs that are closest to that domain rather than to none.
Result<GpuLocality> locate_gpu(const Topology& topology, std::string_view bus_id);
// Every PCI GPU in the topology, in bus order.
Result<std::vector<GpuLocality>> locate_all_gpus(const Topology& topology);

// Slurm/cpuset range syntax: {0,1,2,3,8} -> "0-3,8". Input need not be sorted; duplicates collapse.
std::string format_index_list(std::span<const unsigned> indexes);

// One JSON object: {"bus_id":..., "numa_nodes":[...], "cores":"0-3", "pus":[...], ...}.
std::string to_json(const GpuLocality& locality);

// The hwloc adapter: loads the live machine (nullopt) or an XML export (`lstopo --of xml`) with
// PCI devices kept. Implemented in backends/hwloc.
Result<Topology> load_topology(const std::optional<std::string>& xml_path);

}  // namespace vgpu
