// The fake driver's capability files, under $VGPU_FAKE_NVML_DEVICE_ROOT, following the driver
// (open-gpu-kernel-modules nv-caps.c) and nvidia-modprobe:
// - /proc/driver/nvidia-caps/mig-minors names every GI/CI capability's device minor (a fixture
//   copied there, as the driver prints it);
// - while a GPU instance (compute instance) exists, /proc/driver/nvidia/capabilities/gpu<g>/mig/
//   gi<i>/access (.../ci<c>/access) says "DeviceFileMinor", "DeviceFileMode" (0444 here: the GI/CI
//   default is unverified, docs/security.md) and "DeviceFileModify: 1"; writing
//   "DeviceFileModify: <0|1>" there changes that setting (the fake's file is replaced by the write);
// - /dev/nvidia-caps/nvidia-cap<minor>, plain files here: who can open them is decided by owner and
//   mode, which is all this fake models (no device cgroup);
// - nvidia-modprobe (setuid root, run by the CUDA driver of any user) creates a missing file and,
//   unless the capability says "DeviceFileModify: 0", resets owner and mode to root and the stated
//   mode: modprobe_all();
// - the GPUs' own device files /dev/nvidia<minor> (plain files too), which a whole GPU (MIG off)
//   is used through. /proc/driver/nvidia/params (a test writes it; absent: the driver's defaults,
//   as captured on the lent H200) states their DeviceFileUID, DeviceFileGID and DeviceFileMode;
//   with "ModifyDeviceFiles: 1" nvidia-modprobe resets them to that (nvidia-modprobe-utils.c,
//   mknod_helper), with 0 it leaves them alone. The fake NVML makes a missing one at nvmlInit, as
//   the driver's udev rule or nvidia-modprobe would have at boot;
// - NVML and CUDA themselves, with "ModifyDeviceFiles: 1", give a GPU device file back as stated
//   in any process allowed to, at nvmlInit (and so in fake-cuda-probe): run as root, owner and
//   mode; run as the file's owner, the mode. Measured on a real H100 without nvidia-modprobe
//   (docs/hardware/h200/README.md, 2026-12-06: nvidia-smi and a CUDA program as root left a
//   "nobody 600" file "root 666", a CUDA program of nobody left it "nobody 666", another user's
//   left it alone): libraries_reset().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace fakenvml {

class CapFiles {
 public:
  // Empty when $VGPU_FAKE_NVML_DEVICE_ROOT is unset (a fake without capability files) or, with
  // `error` set, when its mig-minors cannot be read.
  static std::optional<CapFiles> from_env(std::string& error);

  // The /dev files of compute instance `ci` of GPU instance `gi` on the GPU with device minor `gpu`.
  [[nodiscard]] std::optional<std::pair<std::string, std::string>> paths(unsigned gpu, unsigned gi, unsigned ci) const;

  // The driver: a GPU instance (ci empty) or compute instance came into being / went away.
  void registered(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const;
  void unregistered(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const;

  // nvidia-modprobe for every capability that exists now and every GPU device file; returns what
  // it changed, one line each.
  [[nodiscard]] std::vector<std::string> modprobe_all() const;

  // What NVML and CUDA do to the GPU device files at init in a process of effective uid `euid`;
  // returns what changed, one line each.
  [[nodiscard]] std::vector<std::string> libraries_reset(unsigned euid) const;

  // /dev/nvidia<minor>, made with the stated owner and mode when missing.
  [[nodiscard]] std::string gpu_device_path(unsigned minor) const;
  void ensure_gpu_device(unsigned minor) const;

 private:
  [[nodiscard]] std::string access_path(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const;
  [[nodiscard]] std::string device_path(unsigned minor) const;
  std::string root_;
  std::map<std::tuple<unsigned, unsigned, int>, unsigned> minors_;  // (gpu, gi, ci or -1) -> minor
};

}  // namespace fakenvml
