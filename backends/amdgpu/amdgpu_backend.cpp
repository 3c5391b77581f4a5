#include "amdgpu_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <regex>
#include <thread>

namespace vgpu::amdgpu {
namespace {

constexpr std::string_view kDriverDir = "sys/bus/pci/drivers/amdgpu";
constexpr std::string_view kTopology = "sys/class/kfd/kfd/topology/nodes";

std::string device_dir(const std::string& bdf) { return fmt::format("sys/bus/pci/devices/{}", bdf); }

bool is_bdf(const std::string& s) {
  static const std::regex bdf("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
  return std::regex_match(s, bdf);
}

// PCI device ids of the models whose product_name a site's FRU may spell otherwise.
const GpuModel* model_of_device_id(std::string_view id) {
  if (id == "0x74a1") return Catalog::builtin().find_model("MI300X-192GB");
  if (id == "0x74a5") return Catalog::builtin().find_model("MI325X-256GB");
  return nullptr;
}

// A KFD properties file: "<key> <unsigned>" per line. Keys we do not use are skipped (the driver
// adds some in every release); a key we use must hold a number.
Result<std::map<std::string, std::uint64_t>> parse_properties(std::string_view text, const std::string& where) {
  std::map<std::string, std::uint64_t> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty()) continue;
    auto space = line.find(' ');
    if (space == std::string_view::npos)
      return fail(ErrorCode::corrupt, fmt::format("{}: '{}': expected '<key> <value>'", where, line));
    std::uint64_t v = 0;
    auto value = line.substr(space + 1);
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc{} || end != value.data() + value.size()) continue;  // not a number: not one of ours
    out[std::string(line.substr(0, space))] = v;
  }
  for (const char* key : {"simd_count", "location_id", "domain", "drm_render_minor", "unique_id"})
    if (!out.contains(key)) return fail(ErrorCode::corrupt, fmt::format("{}: no numeric '{}'", where, key));
  return out;
}

}  // namespace

std::optional<AmdPartitionMode> parse_mode(std::string_view text) {
  for (auto m : {AmdPartitionMode::spx, AmdPartitionMode::dpx, AmdPartitionMode::tpx, AmdPartitionMode::qpx,
                 AmdPartitionMode::cpx})
    if (text == mode_name(m)) return m;
  return std::nullopt;
}

std::string_view mode_name(AmdPartitionMode mode) {
  switch (mode) {
    case AmdPartitionMode::spx: return "SPX";
    case AmdPartitionMode::dpx: return "DPX";
    case AmdPartitionMode::tpx: return "TPX";
    case AmdPartitionMode::qpx: return "QPX";
    case AmdPartitionMode::cpx: return "CPX";
  }
  return "?";
}

Backend::Backend(Sysfs& sysfs, Options options) : sysfs_(sysfs), options_(options) {}

std::unique_ptr<Backend> Backend::open(std::unique_ptr<Sysfs> sysfs, Options options) {
  auto b = std::make_unique<Backend>(*sysfs, options);
  b->owned_ = std::move(sysfs);
  return b;
}

Result<void> Backend::scan() {
  gpus_.clear();
  unavailable_.clear();
  auto entries = sysfs_.list(kDriverDir);
  if (!entries) {
    unavailable_ = fmt::format("no amdgpu driver: /{} does not exist", kDriverDir);
    return {};
  }
  std::vector<std::string> notes;
  for (const auto& bdf : *entries) {
    if (!is_bdf(bdf)) continue;
    const std::string dev = device_dir(bdf);
    if (!sysfs_.exists(dev + "/current_compute_partition")) continue;  // not partitionable: not ours
    auto product = sysfs_.read(dev + "/product_name");
    const GpuModel* model = product ? Catalog::builtin().find_model_for_product(*product) : nullptr;
    if (!model)
      if (auto id = sysfs_.read(dev + "/device")) model = model_of_device_id(*id);
    if (!model) {
      notes.push_back(
          fmt::format("GPU {} ({}): not a model slurm-vgpu knows", bdf, product ? *product : "no product_name"));
      continue;
    }
    auto memory = sysfs_.read(dev + "/current_memory_partition");
    if (!memory || *memory != "NPS1") {
      notes.push_back(
          fmt::format("GPU {}: memory partition {}: slurm-vgpu's {} catalog assumes NPS1; the GPU is left out", bdf,
                      memory ? *memory : "unreadable", model->name));
      continue;
    }
    gpus_.push_back({bdf, model});
  }
  for (const auto& n : notes) unavailable_ += (unavailable_.empty() ? "" : "; ") + n;
  return {};
}

Result<Backend::Gpu> Backend::gpu_at(int gpu) {
  if (gpus_.empty())
    if (auto ok = scan(); !ok) return std::unexpected(ok.error());
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= gpus_.size())
    return fail(ErrorCode::not_found,
                fmt::format("amdgpu: GPU {}: no such partitionable GPU ({} found)", gpu, gpus_.size()));
  return gpus_[static_cast<std::size_t>(gpu)];
}

Result<std::vector<GpuInfo>> Backend::discover() {
  if (auto ok = scan(); !ok) return std::unexpected(ok.error());
  std::vector<GpuInfo> out;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const std::string dev = device_dir(gpus_[i].bdf);
    GpuInfo info;
    info.index = static_cast<int>(i);
    info.product_name = sysfs_.read(dev + "/product_name").value_or(gpus_[i].model->nvml_names.front());
    auto unique = sysfs_.read(dev + "/unique_id");
    if (!unique) return fail(ErrorCode::io, fmt::format("amdgpu: GPU {}: unique_id unreadable", gpus_[i].bdf));
    info.uuid = "GPU-" + *unique;
    info.pci_bus_id = gpus_[i].bdf;
    std::uint64_t bytes = 0;
    if (auto vram = sysfs_.read(dev + "/mem_info_vram_total"))
      std::from_chars(vram->data(), vram->data() + vram->size(), bytes);
    info.memory_mib = static_cast<int>(bytes >> 20);
    info.mig_current = info.mig_pending = MigMode::enabled;  // partitionable, in a mode we can use
    out.push_back(std::move(info));
  }
  return out;
}

Result<GpuModel> Backend::read_catalog(int gpu) {
  auto g = gpu_at(gpu);
  if (!g) return std::unexpected(g.error());
  auto available = sysfs_.read(device_dir(g->bdf) + "/available_compute_partition");
  if (!available) return std::unexpected(available.error());
  GpuModel model = *g->model;
  std::erase_if(model.profiles, [&](const Profile& p) {
    return available->find(mode_name(static_cast<AmdPartitionMode>(p.nvml_profile_id))) == std::string::npos;
  });
  return model;
}

Result<std::string> Backend::current_mode(const Gpu& g) {
  auto mode = sysfs_.read(device_dir(g.bdf) + "/current_compute_partition");
  if (!mode) return std::unexpected(mode.error());
  if (!parse_mode(*mode))
    return fail(ErrorCode::corrupt,
                fmt::format("amdgpu: GPU {}: current_compute_partition '{}' is not a mode", g.bdf, *mode));
  return *mode;
}

Result<std::vector<Partition>> Backend::partitions(int gpu) {
  auto g = gpu_at(gpu);
  if (!g) return std::unexpected(g.error());
  auto nodes = sysfs_.list(kTopology);
  if (!nodes)
    return fail(ErrorCode::unavailable, fmt::format("amdgpu: /{}: no KFD topology (is amdgpu loaded?)", kTopology));
  std::vector<Partition> out;
  for (const auto& node : *nodes) {
    const std::string path = fmt::format("{}/{}/properties", kTopology, node);
    auto text = sysfs_.read(path);
    if (!text) continue;  // a node that went away while we listed: a switch in progress
    auto props = parse_properties(*text, "/" + path);
    if (!props) return std::unexpected(props.error());
    auto& p = *props;
    if (p["simd_count"] == 0) continue;  // a CPU node
    const auto loc = p["location_id"];
    const std::string bdf =
        fmt::format("{:04x}:{:02x}:{:02x}.{}", p["domain"], (loc >> 8) & 0xff, (loc >> 3) & 0x1f, loc & 7);
    if (bdf != g->bdf) continue;
    out.push_back({static_cast<int>((loc >> 28) & 0xf), static_cast<int>(p["drm_render_minor"]),
                   fmt::format("GPU-{:016x}", p["unique_id"]),
                   static_cast<int>(p.contains("num_xcc") ? p["num_xcc"] : 0)});
  }
  std::ranges::sort(out, {}, &Partition::id);
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].uuid == out[0].uuid)
      return fail(ErrorCode::unavailable,
                  fmt::format("amdgpu: GPU {}: its partitions share one UUID ({}): jobs could not be told apart "
                              "(partitions have their own UUIDs from amdgpu of ROCm 7.0 on)",
                              g->bdf, out[0].uuid));
  return out;
}

Result<InstanceInfo> Backend::instance_of(int gpu, const Gpu& g, const std::string& mode, const Partition& p) {
  const Profile* profile = g.model->find_profile_by_nvml_id(static_cast<int>(*parse_mode(mode)));
  if (!profile)
    return fail(ErrorCode::unavailable,
                fmt::format("amdgpu: GPU {}: mode {} is not in the {} catalog", g.bdf, mode, g.model->name));
  InstanceInfo info;
  info.gpu = gpu;
  info.gi_id = p.id;
  info.ci_id = 0;
  info.profile_id = profile->nvml_profile_id;
  info.placement = {p.id * profile->memory_slices, profile->memory_slices};
  info.mig_uuid = p.uuid;
  info.profile = profile->name;
  return info;
}

Result<std::vector<InstanceInfo>> Backend::list_instances(int gpu) {
  auto g = gpu_at(gpu);
  if (!g) return std::unexpected(g.error());
  auto mode = current_mode(*g);
  if (!mode) return std::unexpected(mode.error());
  auto parts = partitions(gpu);
  if (!parts) return std::unexpected(parts.error());
  const Profile* profile = g->model->find_profile_by_nvml_id(static_cast<int>(*parse_mode(*mode)));
  if (profile && static_cast<int>(parts->size()) != profile->max_instances)
    return fail(ErrorCode::unavailable,
                fmt::format("amdgpu: GPU {}: KFD shows {} partition(s) in {} mode, which has {}: "
                            "a mode switch is in progress",
                            g->bdf, parts->size(), *mode, profile->max_instances));
  std::vector<InstanceInfo> out;
  for (const auto& p : *parts) {
    auto info = instance_of(gpu, *g, *mode, p);
    if (!info) return std::unexpected(info.error());
    out.push_back(std::move(*info));
  }
  return out;
}

Result<InstanceInfo> Backend::create_instance(int gpu, int profile_id, Placement placement) {
  auto g = gpu_at(gpu);
  if (!g) return std::unexpected(g.error());
  const Profile* profile = g->model->find_profile_by_nvml_id(profile_id);
  if (!profile)
    return fail(ErrorCode::invalid_argument,
                fmt::format("amdgpu: GPU {}: no profile with mode id {} on {}", g->bdf, profile_id, g->model->name));
  if (std::ranges::find(profile->placements, placement) == profile->placements.end())
    return fail(ErrorCode::invalid_argument, fmt::format("amdgpu: GPU {}: {{{},{}}} is not a partition of {}", g->bdf,
                                                         placement.start, placement.size, profile->name));
  const std::string want(mode_name(static_cast<AmdPartitionMode>(profile_id)));
  auto mode = current_mode(*g);
  if (!mode) return std::unexpected(mode.error());
  if (*mode != want) {
    const std::string attr = device_dir(g->bdf) + "/current_compute_partition";
    if (auto w = sysfs_.write(attr, want); !w) {
      const int err = w.error();
      std::string why = err == EBUSY    ? "a process still uses one of its partitions"
                        : err == EINVAL ? "the driver does not offer it in the GPU's memory mode"
                        : err == EPERM  ? "a GPU reset is in progress"
                                        : "";
      return fail(err == EBUSY ? ErrorCode::conflict : ErrorCode::io,
                  fmt::format("amdgpu: GPU {}: switching {} -> {}: {}{}{}", g->bdf, *mode, want, std::strerror(err),
                              why.empty() ? "" : ": ", why));
    }
    // KFD is probed again after the switch: wait until the new partitions are all there.
    const auto deadline = std::chrono::steady_clock::now() + options_.switch_timeout;
    for (;;) {
      auto now_mode = current_mode(*g);
      auto parts = partitions(gpu);
      if (now_mode && *now_mode == want && parts && static_cast<int>(parts->size()) == profile->max_instances) break;
      if (std::chrono::steady_clock::now() > deadline)
        return fail(ErrorCode::io,
                    fmt::format("amdgpu: GPU {}: switched to {}, but its {} partitions did not appear within {} ms",
                                g->bdf, want, profile->max_instances, options_.switch_timeout.count()));
      std::this_thread::sleep_for(options_.poll);
    }
  }
  auto parts = partitions(gpu);
  if (!parts) return std::unexpected(parts.error());
  const int id = placement.start / profile->memory_slices;
  auto it = std::ranges::find(*parts, id, &Partition::id);
  if (it == parts->end())
    return fail(ErrorCode::io,
                fmt::format("amdgpu: GPU {}: partition {} of {} is not in KFD's topology", g->bdf, id, want));
  return instance_of(gpu, *g, want, *it);
}

Result<void> Backend::destroy_instance(int gpu, int gi_id) {
  auto parts = partitions(gpu);
  if (!parts) return std::unexpected(parts.error());
  if (std::ranges::find(*parts, gi_id, &Partition::id) == parts->end())
    return fail(ErrorCode::not_found, fmt::format("amdgpu: GPU {}: no partition {}", gpu, gi_id));
  // Nothing to undo in the hardware: the partition stays while its mode does (see the header).
  return {};
}

}  // namespace vgpu::amdgpu
