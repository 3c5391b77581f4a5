// load_topology(): turns the C adapter's callbacks into a Topology value. Nothing may throw back
// through hwloc's C frames, so allocation failures are caught here and reported as errors.
#include <array>
#include <exception>

#include "hwloc_walk.h"
#include "vgpu/locality/locality.h"

namespace vgpu {
namespace {

struct Collector {
  Topology topology;
  bool failed = false;
};

template <class F>
void guarded(void* ctx, F&& f) {
  auto* c = static_cast<Collector*>(ctx);
  if (c->failed) return;
  try {
    f(*c);
  } catch (const std::exception&) {
    c->failed = true;
  }
}

std::vector<unsigned> copy_ids(const unsigned* ids, std::size_t n) {
  return n == 0 ? std::vector<unsigned>{} : std::vector<unsigned>(ids, ids + n);
}

void on_core(void* ctx, unsigned logical_index, const unsigned* pus, std::size_t n) {
  guarded(ctx, [&](Collector& c) { c.topology.cores.push_back({logical_index, copy_ids(pus, n)}); });
}

void on_pci(void* ctx, const vgpu_hwloc_pci* d) {
  guarded(ctx, [&](Collector& c) {
    PciDevice dev;
    dev.bus_id = {d->domain, static_cast<std::uint8_t>(d->bus), static_cast<std::uint8_t>(d->dev),
                  static_cast<std::uint8_t>(d->func)};
    dev.vendor_id = d->vendor_id;
    dev.device_id = d->device_id;
    dev.class_id = d->class_id;
    c.topology.pci_devices.push_back(std::move(dev));
  });
}

void on_ancestor(void* ctx, const char* type, unsigned logical_index, const unsigned* pus, std::size_t n_pus,
                 const unsigned* numa, std::size_t n_numa) {
  guarded(ctx, [&](Collector& c) {
    if (c.topology.pci_devices.empty()) return;
    c.topology.pci_devices.back().ancestors.push_back(
        {type, logical_index, copy_ids(pus, n_pus), copy_ids(numa, n_numa)});
  });
}

}  // namespace

Result<Topology> load_topology(const std::optional<std::string>& xml_path) {
  Collector collector;
  collector.topology.source = xml_path ? "XML file " + *xml_path : std::string("this machine");
  const vgpu_hwloc_visitor visitor{&collector, on_core, on_pci, on_ancestor};
  std::array<char, 512> err{};
  if (vgpu_hwloc_walk(xml_path ? xml_path->c_str() : nullptr, &visitor, err.data(), err.size()) != 0)
    return fail(xml_path ? ErrorCode::corrupt : ErrorCode::unavailable, err.data());
  if (collector.failed)
    return fail(ErrorCode::internal, "out of memory while copying the topology of " + collector.topology.source);
  return std::move(collector.topology);
}

}  // namespace vgpu
