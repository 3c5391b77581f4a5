// The fake amdgpu driver: the sysfs files of AMD Instinct GPUs with the kernel's rules behind their
// writes. Files are computed from the state; the rules live only in write(). Both the FUSE daemon
// (vgpu-fake-amdgpu, for clusters) and the unit tests' in-process Sysfs use this one class.
//
// What it models (sources in docs/backends.md, "AMD Instinct"):
// - /sys/bus/pci/drivers/amdgpu/<bdf> and /sys/bus/pci/devices/<bdf> link to the device directory,
//   which holds vendor, device, product_name, unique_id, mem_info_vram_total and the four
//   partition attributes (amdgpu_gfx.c, amdgpu_gmc.c).
// - current_compute_partition: a write of SPX/DPX/TPX/QPX/CPX (case-insensitive, by prefix)
//   switches the mode: EINVAL for a mode the GPU or its memory mode cannot run, EBUSY while any
//   process has one of the GPU's render nodes open, success (no change) for the current mode.
//   The switch re-creates the KFD topology: one node per partition, with its drm_render_minor,
//   its location_id (partition id in bits 31:28) and its own unique_id (ROCm 7.0 and later).
// - current_memory_partition: a write only records the request; it takes effect when the driver
//   reloads, which the fake never does (a node does not repartition memory under slurm-vgpu).
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fake_amdgpu_fixture.h"

namespace vgpu::fake {

class FakeAmdgpuDriver {
 public:
  // True when some process uses one of these render nodes (minors): the GPU is busy.
  using BusyProbe = std::function<bool(const std::vector<int>& render_minors)>;

  FakeAmdgpuDriver(FakeAmdgpuFixture fixture, BusyProbe busy);

  enum class Kind { missing, dir, file, link };
  struct Entry {
    Kind kind = Kind::missing;
    std::string content;  // a file's text, a link's target
    bool writable = false;
  };
  // `path` relative to the sysfs root ("sys/bus/..."), no symlink followed in its last component.
  [[nodiscard]] Entry stat(std::string_view path) const;
  // Entry names of a directory, sorted; empty for a missing directory.
  [[nodiscard]] std::vector<std::string> list(std::string_view dir) const;
  // Follows every symlink in `path`; the result names a dir, a file or nothing.
  [[nodiscard]] std::string resolve(std::string_view path) const;
  // The kernel's answer to a write of `value` to the attribute at `path` (links followed): 0 or errno.
  std::expected<void, int> write(std::string_view path, std::string_view value);

  // Render minors of GPU `gpu` (fixture order), for the device files the daemon creates.
  [[nodiscard]] std::vector<int> render_minors(std::size_t gpu) const;
  [[nodiscard]] std::size_t gpu_count() const { return gpus_.size(); }
  [[nodiscard]] std::string compute_partition(std::size_t gpu) const;

 private:
  struct Gpu {
    FakeAmdGpuSpec spec;
    std::string compute;           // current mode
    std::string memory_requested;  // what a memory-partition write asked for
  };
  void rebuild_locked();
  std::expected<void, int> set_compute_locked(Gpu& gpu, std::string_view value, std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  std::vector<Gpu> gpus_;
  int switch_ms_ = 0;
  BusyProbe busy_;
  std::map<std::string, Entry> tree_;  // every path -> what it is, rebuilt after each change
};

// Partitions a mode gives a GPU of `xcds` accelerator dies; 0 for a mode it cannot run.
int partitions_of_mode(std::string_view mode, int xcds);

}  // namespace vgpu::fake
