#include "policy_pools.h"

#include <fmt/format.h>

namespace vgpu::viz {
namespace {

AttachKind attach_kind(VizAttach a) {
  switch (a) {
    case VizAttach::mdev: return AttachKind::mdev;
    case VizAttach::sriov_vf: return AttachKind::sriov_vf;
    case VizAttach::mig_vgpu: return AttachKind::mig_vgpu;
    case VizAttach::passthrough: return AttachKind::passthrough;
    case VizAttach::none: break;
  }
  return AttachKind::none;
}

ImageSpec image_spec(const VmImage& image) {
  return {image.kernel, image.initrd, image.cmdline.value_or(""), image.disk.value_or("")};
}

}  // namespace

Result<void> add_policy_pools(VizConfig& config, const PolicyFile& policy) {
  for (const auto& [name, image] : policy.images) {
    auto [it, added] = config.images.emplace(name, image_spec(image));
    if (!added && !(it->second.kernel == image.kernel && it->second.initrd == image.initrd))
      return fail(ErrorCode::invalid_argument,
                  fmt::format("viz: image '{}' is defined differently in the viz config and in policy {}", name,
                              policy.source));
  }
  for (const auto& part : policy.partitions)
    for (const auto& pool : part.viz_pools) {
      const VmImage* image = policy.image(pool.image);
      if (image == nullptr)  // the policy parser already refuses this; keep the merge total
        return fail(ErrorCode::invalid_argument,
                    fmt::format("viz: policy {}: pool {}: unknown image '{}'", policy.source, pool.name, pool.image));
      VizPoolSpec spec;
      spec.name = pool.name;
      spec.attach = attach_kind(pool.attach);
      spec.gpu_type = pool.gpu_type;
      spec.image = image_spec(*image);
      spec.memory_mib = static_cast<unsigned>(pool.memory_mib);
      spec.vcpus = static_cast<unsigned>(pool.vcpus);
      spec.display = pool.display == VizDisplay::spice ? DisplayKind::spice : DisplayKind::vnc;
      if (pool.max_geometry)
        spec.max_geometry = {static_cast<unsigned>(pool.max_geometry->width),
                             static_cast<unsigned>(pool.max_geometry->height)};
      if (config.pools.contains(pool.name))
        return fail(ErrorCode::invalid_argument,
                    fmt::format("viz: pool '{}' is defined both in the viz config and in policy {}; keep one",
                                pool.name, policy.source));
      config.pools.emplace(pool.name, std::move(spec));
    }
  return {};
}

}  // namespace vgpu::viz
