#include "viz_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "vgpu/contract/guarded_read.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::viz {
namespace {

using json = nlohmann::json;

Result<void> only_keys(const json& obj, std::initializer_list<std::string_view> allowed, std::string_view where) {
  return contract::require_keys(obj, where, {}, allowed);
}

Result<std::string> get_string(const json& obj, const char* key, std::string_view where, bool required,
                               std::string fallback = {}) {
  if (!obj.contains(key)) {
    if (required) return fail(ErrorCode::corrupt, fmt::format("{}.{}: {}", where, key, contract::kMissingFieldMessage));
    return fallback;
  }
  if (!obj[key].is_string()) return fail(ErrorCode::corrupt, fmt::format("{}.{}: expected a string", where, key));
  return obj[key].get<std::string>();
}

Result<unsigned> get_uint(const json& obj, const char* key, std::string_view where, unsigned lo, unsigned hi,
                          unsigned fallback) {
  if (!obj.contains(key)) return fallback;
  const auto& v = obj[key];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi) {
    return fail(ErrorCode::corrupt, fmt::format("{}.{}: expected an integer in {}..{}", where, key, lo, hi));
  }
  return static_cast<unsigned>(v.get<std::uint64_t>());
}

Result<std::string> absolute_path(std::string value, std::string_view where, bool optional) {
  if (optional && value.empty()) return value;
  if (value.empty() || value[0] != '/' || value.find('\n') != std::string::npos ||
      value.find("/../") != std::string::npos || value.ends_with("/..")) {
    return fail(ErrorCode::corrupt,
                fmt::format("{}: '{}' is not a plain absolute path", where, printable_label(value)));
  }
  return value;
}

Result<ImageSpec> parse_image(const json& j, std::string_view where) {
  if (auto ok = only_keys(j, {"kernel", "initrd", "cmdline", "disk"}, where); !ok) return std::unexpected(ok.error());
  ImageSpec img;
  auto kernel = get_string(j, "kernel", where, true);
  if (!kernel) return std::unexpected(kernel.error());
  auto k = absolute_path(*kernel, fmt::format("{}.kernel", where), false);
  if (!k) return std::unexpected(k.error());
  img.kernel = *k;
  auto initrd = get_string(j, "initrd", where, true);
  if (!initrd) return std::unexpected(initrd.error());
  auto i = absolute_path(*initrd, fmt::format("{}.initrd", where), false);
  if (!i) return std::unexpected(i.error());
  img.initrd = *i;
  auto cmdline = get_string(j, "cmdline", where, false);
  if (!cmdline) return std::unexpected(cmdline.error());
  img.cmdline = *cmdline;
  auto disk = get_string(j, "disk", where, false);
  if (!disk) return std::unexpected(disk.error());
  auto d = absolute_path(*disk, fmt::format("{}.disk", where), true);
  if (!d) return std::unexpected(d.error());
  img.disk = *d;
  return img;
}

Result<VizPoolSpec> parse_pool(const json& j, std::string_view where) {
  if (auto ok = only_keys(j, {"name", "attach", "gpu_type", "image", "memory_mib", "vcpus", "display", "max_geometry"},
                          where);
      !ok) {
    return std::unexpected(ok.error());
  }
  VizPoolSpec p;
  auto name = get_string(j, "name", where, true);
  if (!name) return std::unexpected(name.error());
  auto checked = check_name("pool", *name);
  if (!checked) return std::unexpected(checked.error().within(where));
  p.name = *checked;
  const std::string here = fmt::format("{} (pool {})", where, p.name);
  auto attach = get_string(j, "attach", here, true);
  if (!attach) return std::unexpected(attach.error());
  auto kind = parse_attach_kind(*attach);
  if (!kind) return std::unexpected(kind.error().within(here));
  p.attach = *kind;
  auto gpu_type = get_string(j, "gpu_type", here, p.attach != AttachKind::none && p.attach != AttachKind::passthrough);
  if (!gpu_type) return std::unexpected(gpu_type.error());
  p.gpu_type = printable_label(*gpu_type);
  if (p.gpu_type != *gpu_type || p.gpu_type.find('/') != std::string::npos) {
    return fail(ErrorCode::corrupt, fmt::format("{}.gpu_type: '{}' must be printable without '/'", here, p.gpu_type));
  }
  if (!j.contains("image"))
    return fail(ErrorCode::corrupt, fmt::format("{}.image: {}", here, contract::kMissingFieldMessage));
  auto image = parse_image(j["image"], fmt::format("{}.image", here));
  if (!image) return std::unexpected(image.error());
  p.image = *image;
  auto mem = get_uint(j, "memory_mib", here, 64, 1 << 20, p.memory_mib);
  if (!mem) return std::unexpected(mem.error());
  p.memory_mib = *mem;
  auto vcpus = get_uint(j, "vcpus", here, 1, 256, p.vcpus);
  if (!vcpus) return std::unexpected(vcpus.error());
  p.vcpus = *vcpus;
  auto display = get_string(j, "display", here, false, "vnc");
  if (!display) return std::unexpected(display.error());
  if (*display == "vnc") {
    p.display = DisplayKind::vnc;
  } else if (*display == "spice") {
    p.display = DisplayKind::spice;
  } else {
    return fail(ErrorCode::corrupt,
                fmt::format("{}.display: '{}' is not vnc or spice", here, printable_label(*display)));
  }
  auto geo = get_string(j, "max_geometry", here, false, "1920x1200");
  if (!geo) return std::unexpected(geo.error());
  auto g = parse_geometry(*geo);
  if (!g) return std::unexpected(g.error().within(fmt::format("{}.max_geometry", here)));
  p.max_geometry = *g;
  return p;
}

}  // namespace

std::string_view to_string(AttachKind kind) {
  switch (kind) {
    case AttachKind::none: return "none";
    case AttachKind::mdev: return "mdev";
    case AttachKind::sriov_vf: return "sriov-vf";
    case AttachKind::mig_vgpu: return "mig-vgpu";
    case AttachKind::passthrough: return "passthrough";
  }
  return "?";
}

Result<AttachKind> parse_attach_kind(std::string_view text) {
  for (const auto k :
       {AttachKind::none, AttachKind::mdev, AttachKind::sriov_vf, AttachKind::mig_vgpu, AttachKind::passthrough}) {
    if (text == to_string(k)) return k;
  }
  return fail(
      ErrorCode::invalid_argument,
      fmt::format("attach '{}': expected none, mdev, sriov-vf, mig-vgpu or passthrough", printable_label(text)));
}

Result<VizConfig> parse_viz_config(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for "1e400"
    return fail(ErrorCode::corrupt, fmt::format("{}: {}", where, e.what()));
  }
  if (auto ok = only_keys(j, {"version",    "libvirt_uri",        "listen_address", "proxy_port",   "public_host",
                              "ssh_host",   "state_dir",          "access_dir",     "sysfs_root",   "novnc_dir",
                              "websockify", "emulator",           "accelerator",    "topology",     "pools",
                              "images",     "ood_listen_address", "ood_host",       "ood_port_min", "ood_port_max"},
                          where);
      !ok) {
    return std::unexpected(ok.error());
  }
  if (!j.contains("version") || !j["version"].is_number_unsigned() || j["version"].get<std::uint64_t>() != 1) {
    return fail(ErrorCode::corrupt, fmt::format("{}: 'version' must be 1", where));
  }
  VizConfig c;
  struct Field {
    const char* key;
    std::string* target;
    bool path;
  };
  for (const Field f :
       {Field{"libvirt_uri", &c.libvirt_uri, false}, Field{"listen_address", &c.listen_address, false},
        Field{"public_host", &c.public_host, false}, Field{"ssh_host", &c.ssh_host, false},
        Field{"state_dir", &c.state_dir, true}, Field{"access_dir", &c.access_dir, true},
        Field{"sysfs_root", &c.sysfs_root, true}, Field{"novnc_dir", &c.novnc_dir, true},
        Field{"websockify", &c.websockify, true}, Field{"emulator", &c.emulator, true},
        Field{"ood_listen_address", &c.ood_listen_address, false}, Field{"ood_host", &c.ood_host, false}}) {
    auto v = get_string(j, f.key, where, false, *f.target);
    if (!v) return std::unexpected(v.error());
    if (f.path) {
      auto p = absolute_path(*v, fmt::format("{}.{}", where, f.key), false);
      if (!p) return std::unexpected(p.error());
    } else if (printable_label(*v) != *v || v->find_first_of(" '\"<>&") != std::string::npos) {
      return fail(ErrorCode::corrupt,
                  fmt::format("{}.{}: '{}' has characters not allowed there", where, f.key, printable_label(*v)));
    }
    *f.target = *v;
  }
  auto accelerator = get_string(j, "accelerator", where, false, c.accelerator);
  if (!accelerator) return std::unexpected(accelerator.error());
  if (*accelerator != "auto" && *accelerator != "tcg")
    return fail(ErrorCode::corrupt, fmt::format("{}.accelerator: '{}': expected \"auto\" or \"tcg\"", where,
                                                printable_label(*accelerator)));
  c.accelerator = *accelerator;
  auto topology = get_string(j, "topology", where, false, c.topology);
  if (!topology) return std::unexpected(topology.error());
  if (!topology->empty() && *topology != "live") {
    auto p = absolute_path(*topology, fmt::format("{}.topology", where), false);
    if (!p)
      return fail(ErrorCode::corrupt,
                  fmt::format("{} (expected \"\", \"live\" or an lstopo XML file)", p.error().message));
  }
  c.topology = *topology;
  auto port = get_uint(j, "proxy_port", where, 1, 65535, c.proxy_port);
  if (!port) return std::unexpected(port.error());
  c.proxy_port = static_cast<std::uint16_t>(*port);
  auto ood_min = get_uint(j, "ood_port_min", where, 1024, 65535, c.ood_port_min);
  if (!ood_min) return std::unexpected(ood_min.error());
  auto ood_max = get_uint(j, "ood_port_max", where, 1024, 65535, c.ood_port_max);
  if (!ood_max) return std::unexpected(ood_max.error());
  if (*ood_min > *ood_max) {
    return fail(ErrorCode::corrupt,
                fmt::format("{}: ood_port_min {} is above ood_port_max {}", where, *ood_min, *ood_max));
  }
  c.ood_port_min = static_cast<std::uint16_t>(*ood_min);
  c.ood_port_max = static_cast<std::uint16_t>(*ood_max);
  if (j.contains("images")) {
    if (!j["images"].is_object()) return fail(ErrorCode::corrupt, fmt::format("{}.images: expected an object", where));
    for (const auto& [key, value] : j["images"].items()) {
      auto name = check_name("image", key);
      if (!name) return std::unexpected(name.error().within(fmt::format("{}.images", where)));
      auto img = parse_image(value, fmt::format("{}.images.{}", where, key));
      if (!img) return std::unexpected(img.error());
      c.images.emplace(key, *img);
    }
  }
  if (!j.contains("pools") || !j["pools"].is_array()) {
    return fail(ErrorCode::corrupt, fmt::format("{}: 'pools' must be an array", where));
  }
  for (std::size_t i = 0; i < j["pools"].size(); ++i) {
    auto pool = parse_pool(j["pools"][i], fmt::format("{}: pools[{}]", where, i));
    if (!pool) return std::unexpected(pool.error());
    const std::string name = pool->name;
    if (!c.pools.emplace(name, std::move(*pool)).second) {
      return fail(ErrorCode::corrupt, fmt::format("{}: pools[{}]: duplicate pool name '{}'", where, i, name));
    }
  }
  return c;
}

Result<VizConfig> load_viz_config(const std::string& path) {
  // It names the images and devices a job's VM gets: read as every file that steers a node is.
  auto text =
      contract::read_guarded(posix_file_system(), path, {.what = "viz config", .max_bytes = 1u << 20, .owners = {}});
  if (!text) return std::unexpected(text.error());
  return parse_viz_config(text->text, path);
}

}  // namespace vgpu::viz
