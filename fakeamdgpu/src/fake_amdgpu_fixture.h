// The fake amdgpu driver's description of a node's AMD Instinct GPUs, from a fixture file.
// Nothing here comes from libvgpu's catalog, so the backend's reading of the fake's sysfs against
// the catalog is a real check.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::fake {

struct FakeAmdGpuSpec {
  std::string bdf;               // "0000:0c:00.0"
  std::string product_name;      // the device's product_name attribute: "AMD Instinct MI300X"
  std::string device_id;         // PCI device id: "0x74a1"
  std::uint64_t vram_bytes = 0;  // mem_info_vram_total
  int xcds = 8;                  // accelerator dies (XCCs)
  int cus_per_xcd = 38;
  std::string compute_partition = "SPX";  // the mode at "driver load"
  std::string memory_partition = "NPS1";
  std::vector<std::string> memory_partitions;  // available_memory_partition
  std::uint64_t unique_id = 0;                 // the GPU's; each partition's is derived from it (ROCm 7.0+)
  int render_minor_base = 128;                 // partition p uses renderD<base + p>, as AMD documents for CPX
};

struct FakeAmdgpuFixture {
  std::vector<FakeAmdGpuSpec> gpus;
  // How long a compute-partition switch keeps the write waiting: the driver tears KFD down and
  // probes it again. AMD publishes no figure; fixtures choose one.
  int compute_switch_ms = 0;
};

inline constexpr std::string_view kFakeAmdgpuFixtureFormat = "slurm-vgpu-fake-amdgpu";

// Strict: unknown keys, a malformed BDF or mode, duplicate BDFs are errors naming the field.
Result<FakeAmdgpuFixture> parse_fake_amdgpu_fixture(std::string_view text, std::string_view source);
Result<FakeAmdgpuFixture> load_fake_amdgpu_fixture(const std::string& path);

}  // namespace vgpu::fake
