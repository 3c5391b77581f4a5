// One element of a partition's "viz_pools": a pool of VMs shown through noVNC.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "policy_reader.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::policy_detail {
namespace {

constexpr int kMaxGeometry = 16384;

std::optional<VizAttach> attach_from(std::string_view s) {
  if (s == "mdev") return VizAttach::mdev;
  if (s == "sriov-vf") return VizAttach::sriov_vf;
  if (s == "mig-vgpu") return VizAttach::mig_vgpu;
  if (s == "passthrough") return VizAttach::passthrough;
  if (s == "none") return VizAttach::none;
  return std::nullopt;
}

bool printable_ascii(std::string_view s) {
  return std::ranges::all_of(s, [](char c) { return c >= 0x20 && c < 0x7F; });
}

// mdev type ids are "<driver>-<type>" as in /sys/class/mdev_bus/*/mdev_supported_types/.
bool is_mdev_type(std::string_view s) {
  return is_valid_name(s) && s.find('-') != std::string_view::npos && s.front() != '-' && s.back() != '-';
}

void check_gpu_type(Diagnostics& d, const Json& spec, const FieldPath& path, const PartitionPolicy& partition,
                    VizPool& pool) {
  FieldPath at = path.key("gpu_type");
  const Json* v = member(spec, "gpu_type");
  if (pool.attach == VizAttach::none) {
    if (v) d.at_key(at, "must be absent when attach is \"none\" (such a VM has no GPU device)");
    return;
  }
  if (!v) {
    d.at_value(at, "{} when attach is \"{}\"", contract::kMissingFieldMessage, to_string(pool.attach));
    return;
  }
  auto type = read_string(d, *v, at);
  if (!type) return;
  switch (pool.attach) {
    case VizAttach::mig_vgpu: {
      if (auto spelled = parse_profile_name(*type); !spelled) {
        d.at_value(at, spelled.error().message);
        return;
      }
      std::vector<std::string> allowed_anywhere;
      for (const auto& m : d.catalog().models())
        for (auto& name : partition.allowed_profiles_for(m))
          if (std::ranges::find(allowed_anywhere, name) == allowed_anywhere.end()) allowed_anywhere.push_back(name);
      if (std::ranges::find(allowed_anywhere, *type) == allowed_anywhere.end()) {
        d.at_value(at, "MIG profile {} is not allowed in partition {} (allowed: {})", *type, partition.name,
                   fmt::join(allowed_anywhere, ", "));
        return;
      }
      break;
    }
    case VizAttach::mdev:
      if (!is_mdev_type(*type)) {
        d.at_value(at, "must be an mdev type id like \"nvidia-558\", {}", got(*v));
        return;
      }
      break;
    default:
      if (type->empty() || type->size() > 64 || !printable_ascii(*type)) {
        d.at_value(at, "must be a vGPU type name of 1 to 64 printable characters, {}", got(*v));
        return;
      }
      break;
  }
  pool.gpu_type = *type;
}

void check_name(Diagnostics& d, const Json& spec, const FieldPath& path, VizPool& pool) {
  FieldPath at = path.key("name");
  const Json* v = member(spec, "name");
  if (!v) return missing(d, at);
  auto name = read_string(d, *v, at);
  if (!name) return;
  if (!contract::is_valid_type_name(*name)) {
    // Users ask for pools as GRES types (--gres=vgpu:<name>:1): the plugin and the job records
    // accept only the GRES type alphabet.
    d.at_value(at, "must be a vgpu type name ({}), {}", contract::type_name_rule(), got(*v));
  } else if (parse_profile_name(*name)) {
    // Users ask for pools and MIG instances the same way (--gres=vgpu:<name>:1).
    d.at_value(at,
               "\"{}\" is spelled like a MIG profile; a pool name must not be <N>g.<M>gb, since users request "
               "both as --gres=vgpu:<name>:1",
               *name);
  } else {
    pool.name = *name;
  }
}

void check_image(Diagnostics& d, const Json& spec, const FieldPath& path, const Json* images, VizPool& pool) {
  FieldPath at = path.key("image");
  const Json* v = member(spec, "image");
  if (!v) return missing(d, at);
  auto name = read_string(d, *v, at);
  if (!name) return;
  if (!images || images->empty()) {
    d.at_value(at, "no image named \"{}\": the file defines no images", *name);
    return;
  }
  if (!member(*images, *name)) {
    d.at_value(at, [&] {
      std::vector<std::string> known;
      for (const auto& [key, _] : images->items()) known.push_back(key);
      return fmt::format("no image named \"{}\" (images: {})", *name, fmt::join(known, ", "));
    });
    return;
  }
  pool.image = *name;
}

std::optional<Geometry> parse_geometry(std::string_view s) {
  auto x = s.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<int> {
    if (digits.empty() || digits.size() > 5 || digits.front() == '0') return std::nullopt;
    int value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    if (value < 1 || value > kMaxGeometry) return std::nullopt;
    return value;
  };
  auto w = number(s.substr(0, x)), h = number(s.substr(x + 1));
  if (!w || !h) return std::nullopt;
  return Geometry{*w, *h};
}

}  // namespace

std::optional<VizPool> parse_viz_pool(Diagnostics& d, const Json& value, const FieldPath& path,
                                      const PartitionPolicy& partition, const Json* images) {
  if (!expect_object(d, value, path)) return std::nullopt;
  reject_unknown_fields(d, value, path,
                        {"name", "attach", "gpu_type", "image", "memory_mib", "vcpus", "max_sessions", "display",
                         "max_geometry", "comment"});
  std::size_t before = d.count();
  VizPool pool;
  pool.partition = partition.name;
  check_name(d, value, path, pool);

  if (const Json* v = member(value, "attach")) {
    auto attach = read_choice(d, *v, path.key("attach"), {"mdev", "sriov-vf", "mig-vgpu", "passthrough", "none"});
    if (attach) {
      pool.attach = *attach_from(*attach);
      check_gpu_type(d, value, path, partition, pool);
    }
  } else {
    missing(d, path.key("attach"));
  }
  check_image(d, value, path, images, pool);

  struct IntField {
    const char* name;
    int* target;
    int min;
    int max;
  };
  for (const auto& f : {IntField{"memory_mib", &pool.memory_mib, 128, 1048576}, IntField{"vcpus", &pool.vcpus, 1, 256},
                        IntField{"max_sessions", &pool.max_sessions, 1, INT_MAX}}) {
    const Json* v = member(value, f.name);
    if (!v) {
      missing(d, path.key(f.name));
    } else if (auto n = read_int(d, *v, path.key(f.name), f.min, f.max)) {
      *f.target = *n;
    }
  }
  if (const Json* v = member(value, "display")) {
    if (auto display = read_choice(d, *v, path.key("display"), {"vnc", "spice"}))
      pool.display = *display == "vnc" ? VizDisplay::vnc : VizDisplay::spice;
  }
  if (const Json* v = member(value, "max_geometry")) {
    if (auto text = read_string(d, *v, path.key("max_geometry"))) {
      pool.max_geometry = parse_geometry(*text);
      if (!pool.max_geometry)
        d.at_value(path.key("max_geometry"), "must be \"<width>x<height>\" with each 1..{}, like \"1920x1080\", {}",
                   kMaxGeometry, got(*v));
    }
  }
  if (const Json* v = member(value, "comment")) read_string(d, *v, path.key("comment"));
  if (d.count() != before) return std::nullopt;
  return pool;
}

}  // namespace vgpu::policy_detail
