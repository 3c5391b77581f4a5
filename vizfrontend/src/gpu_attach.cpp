#include "gpu_attach.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace vgpu::viz {
namespace {

constexpr std::string_view kMdevUuidPrefix = "76677a00-7669-4a00-8000-";

std::string errno_name(int err) {
  switch (err) {
    case EEXIST: return "EEXIST";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EUSERS: return "EUSERS";
    case EBUSY: return "EBUSY";
    case EACCES: return "EACCES";
    case ENODEV: return "ENODEV";
    default: return fmt::format("errno {}", err);
  }
}

std::string kernel_says(int err) { return fmt::format("{} ({})", errno_name(err), std::strerror(err)); }

class NoneAttacher final : public GpuAttacher {
 public:
  Result<Attachment> acquire(const AttachRequest&) override { return Attachment{}; }
  Result<void> release(const Attachment&) override { return {}; }
};

// NVIDIA vGPU through the kernel's mediated-device framework (pre-R580 drivers).
class MdevAttacher final : public GpuAttacher {
 public:
  explicit MdevAttacher(Sysfs& sysfs) : sysfs_(sysfs) {}

  Result<Attachment> acquire(const AttachRequest& req) override {
    const std::string ctx = fmt::format("mdev type {}", req.gpu_type);
    auto parents = sysfs_.list("sys/class/mdev_bus");
    if (!parents) {
      return fail(ErrorCode::unavailable,
                  fmt::format("{}: this node has no mediated-device parents (sys/class/mdev_bus missing: no vGPU "
                              "driver loaded)",
                              ctx));
    }
    std::string chosen;
    std::vector<std::string> offering;
    for (const auto& p : *parents) {
      if (!req.device.empty() && p != req.device) continue;
      const std::string tdir = fmt::format("sys/class/mdev_bus/{}/mdev_supported_types/{}", p, req.gpu_type);
      if (!sysfs_.exists(tdir)) continue;
      offering.push_back(p);
      auto avail = sysfs_.read(tdir + "/available_instances");
      if (avail && *avail != "0" && !avail->empty()) {
        chosen = p;
        break;
      }
    }
    if (offering.empty()) {
      return fail(ErrorCode::not_found,
                  fmt::format("{}: not offered by {}", ctx,
                              req.device.empty() ? std::string("any mdev parent on this node") : req.device));
    }
    if (chosen.empty()) {
      return fail(ErrorCode::no_capacity,
                  fmt::format("{}: no instance available on {}", ctx, fmt::join(offering, ", ")));
    }
    const std::string uuid = mdev_uuid_for_job(req.job_id);
    const std::string create =
        fmt::format("sys/class/mdev_bus/{}/mdev_supported_types/{}/create", chosen, req.gpu_type);
    if (auto w = sysfs_.write(create, uuid); !w) {
      const int err = w.error();
      const ErrorCode code = err == EEXIST   ? ErrorCode::conflict
                             : err == EUSERS ? ErrorCode::no_capacity
                             : err == ENOENT ? ErrorCode::not_found
                             : err == EINVAL ? ErrorCode::invalid_argument
                                             : ErrorCode::io;
      std::string hint = err == EEXIST ? "; a previous session of this job left it behind: run `vgpu-viz reap`" : "";
      return fail(code, fmt::format("{}: parent {}: creating mdev {}: kernel says {}{}", ctx, chosen, uuid,
                                    kernel_says(err), hint));
    }
    // The kernel creates the device synchronously; if it is not there, something else
    // intercepted the write. Undo so nothing is left half-made.
    if (!sysfs_.exists(fmt::format("sys/bus/mdev/devices/{}", uuid))) {
      (void)sysfs_.write(fmt::format("sys/bus/mdev/devices/{}/remove", uuid), "1");
      return fail(ErrorCode::io, fmt::format("{}: parent {}: mdev {} did not appear after create", ctx, chosen, uuid));
    }
    return Attachment{AttachKind::mdev, MdevHostdev{uuid}, chosen, req.gpu_type, {}};
  }

  Result<void> release(const Attachment& a) override {
    const auto* m = std::get_if<MdevHostdev>(&a.device);
    if (m == nullptr) return fail(ErrorCode::internal, "mdev release: attachment has no mdev UUID");
    auto w = sysfs_.write(fmt::format("sys/bus/mdev/devices/{}/remove", m->uuid), "1");
    if (!w && w.error() != ENOENT) {  // ENOENT: already gone, which is what we wanted
      return fail(ErrorCode::io, fmt::format("mdev {}: remove: kernel says {}", m->uuid, kernel_says(w.error())));
    }
    return {};
  }

  std::vector<std::uint32_t> orphan_candidates() const override {
    std::vector<std::uint32_t> jobs;
    auto devices = sysfs_.list("sys/bus/mdev/devices");
    if (!devices) return jobs;
    for (const auto& u : *devices) {
      if (auto job = job_of_mdev_uuid(u)) jobs.push_back(*job);
    }
    return jobs;
  }

 private:
  Sysfs& sysfs_;
};

// NVIDIA vGPU on SR-IOV virtual functions (R580+ on Linux 6.8+: no mdev). The vGPU type is
// selected by writing its id to the VF's nvidia/current_vgpu_type; "0" frees the VF.
// mig-vgpu is the same with the VF taken from the GPU that holds the job's MIG instance, and
// the instance selected through nvidia/current_gpu_instance_id where the driver offers it.
class VfAttacher final : public GpuAttacher {
 public:
  VfAttacher(Sysfs& sysfs, AttachKind kind) : sysfs_(sysfs), kind_(kind) {}

  Result<Attachment> acquire(const AttachRequest& req) override {
    const std::string ctx = fmt::format("{} vGPU type {}", to_string(kind_), req.gpu_type);
    if (kind_ == AttachKind::mig_vgpu && req.gpu_instance.empty()) {
      return fail(ErrorCode::invalid_argument, ctx + ": needs the job's MIG GPU instance, none given");
    }
    auto devices = sysfs_.list("sys/bus/pci/devices");
    if (!devices) return fail(ErrorCode::unavailable, ctx + ": sys/bus/pci/devices missing");
    bool any_vf = false;
    bool type_known = false;
    for (const auto& vf : *devices) {
      const std::string nv = fmt::format("sys/bus/pci/devices/{}/nvidia", vf);
      if (!sysfs_.exists(nv + "/current_vgpu_type")) continue;
      if (!req.device.empty()) {
        auto pf = sysfs_.link_name(fmt::format("sys/bus/pci/devices/{}/physfn", vf));
        if (vf != req.device && (!pf || *pf != req.device)) continue;
      }
      any_vf = true;
      auto creatable = sysfs_.read(nv + "/creatable_vgpu_types");
      if (!creatable) continue;
      auto types = parse_creatable_vgpu_types(*creatable, nv + "/creatable_vgpu_types");
      if (!types) return std::unexpected(types.error().within(ctx));
      const VgpuType* type = nullptr;
      for (const auto& t : *types) {
        if (t.name == req.gpu_type || t.id == req.gpu_type) type = &t;
      }
      if (type == nullptr) continue;
      type_known = true;
      auto current = sysfs_.read(nv + "/current_vgpu_type");
      if (!current || *current != "0") continue;  // VF in use
      return take(vf, *type, req, ctx);
    }
    if (!any_vf) {
      return fail(ErrorCode::unavailable, fmt::format("{}: no NVIDIA vGPU-capable virtual function on {}", ctx,
                                                      req.device.empty() ? std::string("this node") : req.device));
    }
    if (!type_known) return fail(ErrorCode::not_found, ctx + ": no virtual function can create this type");
    return fail(ErrorCode::no_capacity, ctx + ": every virtual function that offers it is in use");
  }

  Result<void> release(const Attachment& a) override {
    const std::string nv = fmt::format("sys/bus/pci/devices/{}/nvidia", a.parent);
    auto w = sysfs_.write(nv + "/current_vgpu_type", "0");
    if (!w && w.error() != ENOENT) {
      return fail(ErrorCode::io,
                  fmt::format("VF {}: clearing current_vgpu_type: kernel says {}", a.parent, kernel_says(w.error())));
    }
    return {};
  }

 private:
  Result<Attachment> take(const std::string& vf, const VgpuType& type, const AttachRequest& req,
                          const std::string& ctx) {
    const std::string nv = fmt::format("sys/bus/pci/devices/{}/nvidia", vf);
    std::string previous_instance;
    const bool select_instance = kind_ == AttachKind::mig_vgpu && sysfs_.exists(nv + "/current_gpu_instance_id");
    if (select_instance) {
      previous_instance = sysfs_.read(nv + "/current_gpu_instance_id").value_or("");
      if (auto w = sysfs_.write(nv + "/current_gpu_instance_id", req.gpu_instance); !w) {
        return fail(ErrorCode::invalid_argument, fmt::format("{}: VF {}: selecting GPU instance {}: kernel says {}",
                                                             ctx, vf, req.gpu_instance, kernel_says(w.error())));
      }
    }
    if (auto w = sysfs_.write(nv + "/current_vgpu_type", type.id); !w) {
      const int err = w.error();
      if (select_instance && !previous_instance.empty()) {
        (void)sysfs_.write(nv + "/current_gpu_instance_id", previous_instance);  // leave the VF as found
      }
      return fail(err == EBUSY    ? ErrorCode::conflict
                  : err == EINVAL ? ErrorCode::invalid_argument
                                  : ErrorCode::io,
                  fmt::format("{}: VF {}: writing type id {}: kernel says {}", ctx, vf, type.id, kernel_says(err)));
    }
    return Attachment{kind_, PciHostdev{vf}, vf, type.id, req.gpu_instance};
  }

  Sysfs& sysfs_;
  AttachKind kind_;
};

// The whole GPU as a PCI hostdev. libvirt (managed='yes') detaches it from its host driver and
// gives it back on destroy, so there is nothing to write here; we check it is a display device.
class PassthroughAttacher final : public GpuAttacher {
 public:
  explicit PassthroughAttacher(Sysfs& sysfs) : sysfs_(sysfs) {}

  Result<Attachment> acquire(const AttachRequest& req) override {
    if (req.device.empty()) return fail(ErrorCode::invalid_argument, "passthrough: no GPU address given");
    auto bdf = check_pci_address(req.device);
    if (!bdf) return std::unexpected(bdf.error().within("passthrough"));
    const std::string dir = fmt::format("sys/bus/pci/devices/{}", *bdf);
    auto cls = sysfs_.read(dir + "/class");
    if (!cls) return fail(ErrorCode::not_found, fmt::format("passthrough: GPU {}: no such PCI device", *bdf));
    if (!cls->starts_with("0x03")) {
      return fail(ErrorCode::invalid_argument,
                  fmt::format("passthrough: {}: PCI class {} is not a display controller", *bdf, *cls));
    }
    if (!sysfs_.exists("sys/kernel/iommu_groups") || !sysfs_.exists(dir + "/iommu_group")) {
      return fail(ErrorCode::unavailable, fmt::format("passthrough: GPU {}: no IOMMU group (IOMMU off?)", *bdf));
    }
    return Attachment{AttachKind::passthrough, PciHostdev{*bdf}, *bdf, {}, {}};
  }
  Result<void> release(const Attachment&) override { return {}; }

 private:
  Sysfs& sysfs_;
};

}  // namespace

std::unique_ptr<GpuAttacher> make_attacher(AttachKind kind, Sysfs& sysfs) {
  switch (kind) {
    case AttachKind::none: return std::make_unique<NoneAttacher>();
    case AttachKind::mdev: return std::make_unique<MdevAttacher>(sysfs);
    case AttachKind::sriov_vf:
    case AttachKind::mig_vgpu: return std::make_unique<VfAttacher>(sysfs, kind);
    case AttachKind::passthrough: return std::make_unique<PassthroughAttacher>(sysfs);
  }
  return std::make_unique<NoneAttacher>();
}

std::string mdev_uuid_for_job(std::uint32_t job_id) { return fmt::format("{}{:012x}", kMdevUuidPrefix, job_id); }

Result<std::uint32_t> job_of_mdev_uuid(std::string_view uuid) {
  if (!uuid.starts_with(kMdevUuidPrefix) || uuid.size() != kMdevUuidPrefix.size() + 12) {
    return fail(ErrorCode::not_found, fmt::format("mdev {}: not a viz session device", uuid));
  }
  std::uint64_t v = 0;
  for (const char c : uuid.substr(kMdevUuidPrefix.size())) {
    const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return fail(ErrorCode::not_found, fmt::format("mdev {}: not a viz session device", uuid));
    v = v * 16 + static_cast<std::uint64_t>(d);
  }
  if (v == 0 || v > 0xffffffffULL) return fail(ErrorCode::not_found, fmt::format("mdev {}: job id out of range", uuid));
  return static_cast<std::uint32_t>(v);
}

Result<std::vector<VgpuType>> parse_creatable_vgpu_types(std::string_view text, std::string_view origin) {
  std::vector<VgpuType> out;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const auto nl = std::min(text.find('\n', pos), text.size());
    const auto line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      return fail(ErrorCode::corrupt, fmt::format("{}: line {}: expected 'ID : name'", origin, line_no));
    }
    auto trim = [](std::string_view s) {
      const auto b = s.find_first_not_of(" \t");
      const auto e = s.find_last_not_of(" \t");
      return b == std::string_view::npos ? std::string_view{} : s.substr(b, e - b + 1);
    };
    const auto id = trim(line.substr(0, colon));
    const auto name = trim(line.substr(colon + 1));
    if (id == "ID") continue;  // header
    if (id.empty() || id.find_first_not_of("0123456789") != std::string_view::npos || name.empty()) {
      return fail(ErrorCode::corrupt, fmt::format("{}: line {}: bad vGPU type entry", origin, line_no));
    }
    out.push_back(VgpuType{std::string(id), std::string(name)});
  }
  return out;
}

}  // namespace vgpu::viz
