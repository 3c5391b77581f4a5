// GPU attachment backends: how a session's guest gets its (v)GPU. One interface, one backend
// per attach kind. acquire() either returns a complete attachment or leaves nothing behind;
// release() is idempotent so teardown and reap can call it on whatever state they find.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "domain_xml.h"
#include "sysfs.h"
#include "viz_config.h"

namespace vgpu::viz {

struct AttachRequest {
  std::uint32_t job_id = 0;
  std::string gpu_type;  // from the pool
  // The device the scheduler gave the job, when it matters: the whole GPU for passthrough, or
  // the parent GPU (physical function) to take a VF / mdev from. Empty = any.
  std::string device;
  std::string gpu_instance;  // mig-vgpu: the MIG GPU instance id created for the job
};

struct Attachment {
  AttachKind kind = AttachKind::none;
  GpuDevice device;    // what goes into the domain XML
  std::string parent;  // mdev parent, or the VF for sriov-vf/mig-vgpu, or the GPU for passthrough
  std::string type;    // mdev type id or vGPU type id written to the VF
  std::string gpu_instance;
  friend bool operator==(const Attachment&, const Attachment&) = default;
};

class GpuAttacher {
 public:
  virtual ~GpuAttacher() = default;
  virtual Result<Attachment> acquire(const AttachRequest& request) = 0;
  virtual Result<void> release(const Attachment& attachment) = 0;
  // Job ids of devices this backend can recognise as belonging to a viz session even without
  // a state file (mdevs carry the job id in their UUID). Empty for the other kinds.
  virtual std::vector<std::uint32_t> orphan_candidates() const { return {}; }
};

std::unique_ptr<GpuAttacher> make_attacher(AttachKind kind, Sysfs& sysfs);

// mdev UUIDs encode the job id so a crashed session's mdev is still found by reap:
// 76677a00-7669-4a00-8000-<job id as 12 hex digits>.
std::string mdev_uuid_for_job(std::uint32_t job_id);
Result<std::uint32_t> job_of_mdev_uuid(std::string_view uuid);

// Parses NVIDIA's `creatable_vgpu_types` ("ID    : vGPU Name" header, then "557   : NVIDIA H100-4C").
struct VgpuType {
  std::string id;
  std::string name;
};
Result<std::vector<VgpuType>> parse_creatable_vgpu_types(std::string_view text, std::string_view origin);

}  // namespace vgpu::viz
