#include "fake_amdgpu_driver.h"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

namespace vgpu::fake {
namespace {

constexpr std::string_view kDevices = "sys/devices/pci0000:00";
constexpr std::string_view kTopology = "sys/class/kfd/kfd/topology/nodes";
const std::vector<std::string_view> kModes = {"SPX", "DPX", "TPX", "QPX", "CPX"};

// The compute modes a memory mode allows (aqua_vanjaram_get_xcp_res_info).
bool mode_allows(std::string_view compute, std::string_view memory) {
  if (memory == "NPS1") return compute != "TPX";
  if (memory == "NPS2") return compute == "DPX";
  if (memory == "NPS4") return compute == "QPX" || compute == "CPX";
  return false;
}

unsigned bus_of(const std::string& bdf) { return static_cast<unsigned>(std::stoul(bdf.substr(5, 2), nullptr, 16)); }
unsigned devfn_of(const std::string& bdf) {
  unsigned dev = static_cast<unsigned>(std::stoul(bdf.substr(8, 2), nullptr, 16));
  unsigned fn = static_cast<unsigned>(bdf[11] - '0');
  return (dev << 3) | fn;
}

}  // namespace

int partitions_of_mode(std::string_view mode, int xcds) {
  if (mode == "SPX") return 1;
  if (mode == "DPX") return 2;
  if (mode == "QPX") return 4;
  if (mode == "CPX") return xcds;
  if (mode == "TPX") return xcds == 6 ? 3 : 0;
  return 0;
}

FakeAmdgpuDriver::FakeAmdgpuDriver(FakeAmdgpuFixture fixture, BusyProbe busy)
    : switch_ms_(fixture.compute_switch_ms), busy_(std::move(busy)) {
  for (auto& spec : fixture.gpus) {
    Gpu g{std::move(spec), "", ""};
    g.compute = g.spec.compute_partition;
    g.memory_requested = g.spec.memory_partition;
    gpus_.push_back(std::move(g));
  }
  std::lock_guard lock(mu_);
  rebuild_locked();
}

void FakeAmdgpuDriver::rebuild_locked() {
  tree_.clear();
  auto dir = [&](const std::string& path) {
    // Every ancestor of a path is a directory.
    for (std::size_t i = path.find('/'); i != std::string::npos; i = path.find('/', i + 1))
      tree_.emplace(path.substr(0, i), Entry{Kind::dir, "", false});
    tree_.emplace(path, Entry{Kind::dir, "", false});
  };
  auto file = [&](const std::string& path, std::string content, bool writable = false) {
    dir(path.substr(0, path.rfind('/')));
    tree_[path] = Entry{Kind::file, std::move(content) + "\n", writable};
  };
  auto link = [&](const std::string& path, std::string target) {
    dir(path.substr(0, path.rfind('/')));
    tree_[path] = Entry{Kind::link, std::move(target), false};
  };
  dir("sys/bus/pci/drivers/amdgpu");
  for (const char* f : {"bind", "unbind", "new_id", "remove_id", "uevent"})
    file(fmt::format("sys/bus/pci/drivers/amdgpu/{}", f), "", true);
  dir(std::string(kTopology));
  // Node 0 is the host CPU, as on every KFD system.
  file(fmt::format("{}/0/properties", kTopology),
       "cpu_cores_count 2\nsimd_count 0\nmem_banks_count 1\nvendor_id 0\ndevice_id 0\nlocation_id 0\n"
       "domain 0\ndrm_render_minor 0\nunique_id 0");
  int kfd_node = 1;
  for (const auto& g : gpus_) {
    const auto& s = g.spec;
    const std::string dev = fmt::format("{}/{}", kDevices, s.bdf);
    link(fmt::format("sys/bus/pci/drivers/amdgpu/{}", s.bdf), fmt::format("../../../../devices/pci0000:00/{}", s.bdf));
    link(fmt::format("sys/bus/pci/devices/{}", s.bdf), fmt::format("../../../devices/pci0000:00/{}", s.bdf));
    file(dev + "/vendor", "0x1002");
    file(dev + "/device", s.device_id);
    file(dev + "/product_name", s.product_name);
    file(dev + "/unique_id", fmt::format("{:016x}", s.unique_id));
    file(dev + "/mem_info_vram_total", std::to_string(s.vram_bytes));
    std::string available;
    for (auto m : kModes)
      if (partitions_of_mode(m, s.xcds) > 0 && mode_allows(m, s.memory_partition))
        available += (available.empty() ? "" : ", ") + std::string(m);
    file(dev + "/current_compute_partition", g.compute, true);
    file(dev + "/available_compute_partition", available);
    file(dev + "/current_memory_partition", s.memory_partition, s.memory_partitions.size() > 1);
    std::string mems;
    for (const auto& m : s.memory_partitions) mems += (mems.empty() ? "" : ", ") + m;
    file(dev + "/available_memory_partition", mems);
    const int parts = partitions_of_mode(g.compute, s.xcds);
    const int xcc = s.xcds / parts;
    for (int p = 0; p < parts; ++p) {
      const unsigned location = (static_cast<unsigned>(p) << 28) | (bus_of(s.bdf) << 8) | devfn_of(s.bdf);
      const std::uint64_t unique = s.unique_id ^ (static_cast<std::uint64_t>(p) << 56);
      file(fmt::format("{}/{}/properties", kTopology, kfd_node++),
           fmt::format("cpu_cores_count 0\nsimd_count {}\nmem_banks_count 1\nvendor_id 4098\ndevice_id {}\n"
                       "location_id {}\ndomain {}\ndrm_render_minor {}\nunique_id {}\nnum_xcc {}",
                       xcc * s.cus_per_xcd * 4, std::stoul(s.device_id, nullptr, 16), location,
                       std::stoul(s.bdf.substr(0, 4), nullptr, 16), s.render_minor_base + p, unique, xcc));
    }
  }
}

FakeAmdgpuDriver::Entry FakeAmdgpuDriver::stat(std::string_view path) const {
  std::lock_guard lock(mu_);
  if (path.empty()) return Entry{Kind::dir, "", false};
  auto it = tree_.find(std::string(path));
  return it == tree_.end() ? Entry{} : it->second;
}

std::vector<std::string> FakeAmdgpuDriver::list(std::string_view dir) const {
  std::lock_guard lock(mu_);
  const std::string prefix = dir.empty() ? "" : std::string(dir) + "/";
  std::vector<std::string> out;
  for (auto it = tree_.lower_bound(prefix); it != tree_.end() && it->first.starts_with(prefix); ++it) {
    std::string_view rest = std::string_view(it->first).substr(prefix.size());
    if (!rest.empty() && rest.find('/') == std::string_view::npos) out.emplace_back(rest);
  }
  return out;
}

std::string FakeAmdgpuDriver::resolve(std::string_view path) const {
  std::vector<std::string> parts;
  std::string todo(path);
  for (int hops = 0; hops < 40; ++hops) {
    bool followed = false;
    std::vector<std::string> done;
    std::size_t start = 0;
    while (start <= todo.size()) {
      std::size_t slash = todo.find('/', start);
      std::string part = todo.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      start = slash == std::string::npos ? todo.size() + 1 : slash + 1;
      if (part.empty() || part == ".") continue;
      if (part == "..") {
        if (!done.empty()) done.pop_back();
        continue;
      }
      done.push_back(part);
      std::string sofar;
      for (const auto& d : done) sofar += (sofar.empty() ? "" : "/") + d;
      Entry e = stat(sofar);
      if (e.kind == Kind::link) {
        done.pop_back();
        std::string base;
        for (const auto& d : done) base += (base.empty() ? "" : "/") + d;
        std::string rest = start <= todo.size() ? todo.substr(start) : "";
        todo = (base.empty() ? "" : base + "/") + e.content + (rest.empty() ? "" : "/" + rest);
        followed = true;
        break;
      }
    }
    if (!followed) {
      std::string out;
      for (const auto& d : done) out += (out.empty() ? "" : "/") + d;
      return out;
    }
  }
  return {};  // a link loop: nothing
}

std::expected<void, int> FakeAmdgpuDriver::write(std::string_view path, std::string_view value) {
  const std::string real = resolve(path);
  std::unique_lock lock(mu_);
  auto it = tree_.find(real);
  if (it == tree_.end()) return std::unexpected(ENOENT);
  if (it->second.kind != Kind::file || !it->second.writable) return std::unexpected(EACCES);
  for (auto& g : gpus_) {
    const std::string dev = fmt::format("{}/{}/", kDevices, g.spec.bdf);
    if (real == dev + "current_compute_partition") return set_compute_locked(g, value, lock);
    if (real == dev + "current_memory_partition") {
      std::string want(value.substr(0, value.find('\n')));
      for (auto& c : want) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (std::ranges::find(g.spec.memory_partitions, want) == g.spec.memory_partitions.end())
        return std::unexpected(EINVAL);
      g.memory_requested = want;  // "please remove and reload the driver"
      return {};
    }
  }
  return {};  // bind, unbind, ...: accepted and ignored
}

std::expected<void, int> FakeAmdgpuDriver::set_compute_locked(Gpu& gpu, std::string_view value,
                                                              std::unique_lock<std::mutex>& lock) {
  std::string_view mode;
  for (auto m : kModes)
    if (value.size() >= 3 && ::strncasecmp(value.data(), m.data(), 3) == 0) mode = m;
  if (mode.empty() || partitions_of_mode(mode, gpu.spec.xcds) == 0 || !mode_allows(mode, gpu.spec.memory_partition))
    return std::unexpected(EINVAL);
  if (mode == gpu.compute) return {};
  const auto minors = render_minors(static_cast<std::size_t>(&gpu - gpus_.data()));
  if (busy_ && busy_(minors)) return std::unexpected(EBUSY);
  // KFD is torn down and probed again while the write waits; readers see the old tree meanwhile.
  if (switch_ms_ > 0) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(switch_ms_));
    lock.lock();
  }
  gpu.compute = std::string(mode);
  rebuild_locked();
  return {};
}

std::vector<int> FakeAmdgpuDriver::render_minors(std::size_t gpu) const {
  std::vector<int> out;
  // The driver makes a render node for every possible partition at load, whatever the mode.
  for (int p = 0; p < 8; ++p) out.push_back(gpus_.at(gpu).spec.render_minor_base + p);
  return out;
}

std::string FakeAmdgpuDriver::compute_partition(std::size_t gpu) const {
  std::lock_guard lock(mu_);
  return gpus_.at(gpu).compute;
}

}  // namespace vgpu::fake
