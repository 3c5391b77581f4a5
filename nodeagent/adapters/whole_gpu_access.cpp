// InstanceAccess for whole GPUs (MIG off), over another for MIG instances. A process uses a whole
// GPU through its device file /dev/nvidia<minor> (with /dev/nvidiactl and /dev/nvidia-uvm, which
// every GPU shares and which give no GPU by themselves), so owner and mode of that file decide who
// can use the GPU: granted, <uid> 0600; held by no job, root 0600.
//
// Unlike a MIG capability, a GPU device file has no setting of its own that keeps nvidia-modprobe
// away: with the module parameter NVreg_ModifyDeviceFiles=1 (the default), nvidia-modprobe, setuid
// root and run by the CUDA driver of any user, gives the file back the driver's DeviceFileUID,
// DeviceFileGID and DeviceFileMode (0666 by default) at the next CUDA program. nvidia-modprobe is
// not the only one: on a real GPU without it, NVML and CUDA themselves gave the file back in any
// process allowed to (nvidia-smi or a CUDA program as root: root 0666; a CUDA program of the
// file's owner: its mode 0666; docs/hardware/h200/README.md). So a whole GPU is confinable only
// where /proc/driver/nvidia/params says "ModifyDeviceFiles: 0"; elsewhere
// whole_gpus_unconfinable() says why and the planner offers no whole GPU (docs/security.md).
// A GPU back in MIG mode gets its file back as the driver states it, since MIG jobs open it too.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "adapters.h"
#include "read_acl.h"
#include "vgpu/ledger/share_groups.h"

namespace vgpu::agent {
namespace {

constexpr mode_t kOwnerOnly = 0600;

// Whether a ledger instance is a whole GPU. Not by its profile name: a share type or class the
// GPU realizes ("half" of whole.48gb) is named after itself. NVML names a MIG device "MIG-..."
// and a GPU "GPU-...", and the whole GPU as an instance carries its GPU's UUID (whole_gpus.h).
bool is_whole_gpu(const LedgerInstance& instance) { return instance.mig_uuid.starts_with("GPU-"); }

// What the driver states for its GPU device files (/proc/driver/nvidia/params).
struct DeviceFileParams {
  bool modify = true;
  unsigned uid = 0, gid = 0;
  mode_t mode = 0666;
};

Result<DeviceFileParams> read_params(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::unavailable, fmt::format("{}: cannot open", path));
  DeviceFileParams p;
  bool saw_modify = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    long value = 0;
    if (!(fields >> key >> value)) continue;
    if (key == "ModifyDeviceFiles:") {
      p.modify = value != 0;
      saw_modify = true;
    } else if (key == "DeviceFileUID:") {
      p.uid = static_cast<unsigned>(value);
    } else if (key == "DeviceFileGID:") {
      p.gid = static_cast<unsigned>(value);
    } else if (key == "DeviceFileMode:") {
      p.mode = static_cast<mode_t>(value) & 07777;
    }
  }
  if (!saw_modify) return fail(ErrorCode::corrupt, fmt::format("{}: no ModifyDeviceFiles line", path));
  return p;
}

class WholeGpuAccess final : public InstanceAccess {
 public:
  WholeGpuAccess(std::string root, GpuReader& gpus, std::unique_ptr<InstanceAccess> mig)
      : root_(std::move(root)), gpus_(gpus), mig_(std::move(mig)) {}

  Result<void> grant(const LedgerInstance& instance, unsigned uid) override {
    if (!is_whole_gpu(instance)) return mig_->grant(instance, uid);
    if (auto why = whole_gpus_unconfinable(); !why.empty()) return fail(ErrorCode::unavailable, why);
    return set_owner(instance.gpu, uid, kOwnerOnly, 0);
  }

  Result<void> revoke(const LedgerInstance& instance) override {
    if (!is_whole_gpu(instance)) return mig_->revoke(instance);
    return set_owner(instance.gpu, 0, kOwnerOnly, 0);
  }

  // Shares of a whole GPU held by several users' jobs (CUDA MPS): the first user owns the file and
  // the others get read-write through its ACL, as the MPS server and every client open the GPU.
  Result<void> grant_users(const LedgerInstance& instance, const std::vector<std::string>& users) override {
    if (!is_whole_gpu(instance)) return mig_->grant_users(instance, users);
    if (users.empty()) return revoke(instance);
    if (auto why = whole_gpus_unconfinable(); !why.empty()) return fail(ErrorCode::unavailable, why);
    auto uids = uids_of(users);
    if (!uids) return std::unexpected(uids.error());
    auto path = device_file(instance.gpu);
    if (!path) return std::unexpected(path.error());
    if (auto owned = set_file(*path, uids->front(), kOwnerOnly, 0); !owned) return std::unexpected(owned.error());
    if (uids->size() == 1) return {};
    return set_users_acl(*path, {uids->begin() + 1, uids->end()}, AclAccess::read_write);
  }

  Result<int> secure_unheld(const Ledger& ledger) override {
    auto changed = mig_->secure_unheld(ledger);
    if (!changed || ledger.gpus.empty() || !whole_gpus_unconfinable().empty()) return changed;
    auto params = read_params(params_path());
    if (!params) return std::unexpected(params.error());
    auto gpus = gpus_.discover();
    if (!gpus) return std::unexpected(gpus.error().within("whole-GPU device files"));
    for (const auto& g : *gpus) {
      if (!ledger.find_gpu(g.index) || g.minor < 0) continue;
      if (g.mig_current != MigMode::enabled) {  // MIG off, or a GPU without MIG
        const bool held = std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) {
          return i.gpu == g.index && is_whole_gpu(i) && instance_is_held(ledger, i);
        });
        if (held) continue;
        auto was = set_file(device_path(g.minor), 0, kOwnerOnly, 0);
        if (!was) return std::unexpected(was.error());
        *changed += *was ? 1 : 0;
      } else if (g.mig_current == MigMode::enabled && is_locked(device_path(g.minor))) {
        // Locked while it was whole; MIG jobs open the GPU's file beside their capabilities.
        auto was = set_file(device_path(g.minor), params->uid, params->mode, params->gid);
        if (!was) return std::unexpected(was.error());
        *changed += *was ? 1 : 0;
      }
    }
    return changed;
  }

  std::string whole_gpus_unconfinable() override {
    auto params = read_params(params_path());
    if (!params) return params.error().message;
    if (params->modify)
      return fmt::format(
          "{}: ModifyDeviceFiles: 1, so NVML and CUDA (nvidia-modprobe too, where installed) would give a "
          "job's /dev/nvidia<N> back to every user (set options nvidia NVreg_ModifyDeviceFiles=0, "
          "docs/security.md)",
          params_path());
    return {};
  }

 private:
  std::string params_path() const { return root_ + "/proc/driver/nvidia/params"; }
  std::string device_path(int minor) const { return fmt::format("{}/dev/nvidia{}", root_, minor); }

  static bool is_locked(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && st.st_uid == 0 && st.st_gid == 0 && (st.st_mode & 07777) == kOwnerOnly;
  }

  Result<std::string> device_file(int gpu) {
    auto gpus = gpus_.discover();
    if (!gpus) return std::unexpected(gpus.error().within(fmt::format("GPU {}: device file", gpu)));
    auto g = std::ranges::find(*gpus, gpu, &GpuInfo::index);
    if (g == gpus->end() || g->minor < 0)
      return fail(ErrorCode::not_found, fmt::format("GPU {}: device minor unknown", gpu));
    return device_path(g->minor);
  }

  Result<void> set_owner(int gpu, unsigned uid, mode_t mode, unsigned gid) {
    auto path = device_file(gpu);
    if (!path) return std::unexpected(path.error());
    auto changed = set_file(*path, uid, mode, gid);
    if (!changed) return std::unexpected(changed.error());
    return {};
  }

  // Mode first, then owner, when the mode narrows: in between the file is root's alone. Whether
  // anything changed. With ModifyDeviceFiles=0 nothing creates a missing file, so none is made. A
  // share's ACL goes with any change: the mode alone decides again (a file with an ACL shows its
  // mask as group bits, so it never reads as the mode asked for here).
  static Result<bool> set_file(const std::string& path, unsigned uid, mode_t mode, unsigned gid) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
      return fail(ErrorCode::io, fmt::format("stat {}: {}", path, std::strerror(errno)));
    // A symbolic link or anything else there is not the driver's: refuse rather than follow it.
    if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
      return fail(ErrorCode::corrupt, fmt::format("{}: not a character device", path));
    if (st.st_uid == uid && st.st_gid == gid && (st.st_mode & 07777) == mode) return false;
    if (auto ok = remove_acl(path); !ok) return std::unexpected(ok.error());
    if (::chmod(path.c_str(), mode & st.st_mode & 07777) != 0)
      return fail(ErrorCode::io, fmt::format("chmod {}: {}", path, std::strerror(errno)));
    if (::chown(path.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0)
      return fail(ErrorCode::io, fmt::format("chown {}:{} {}: {}", uid, gid, path, std::strerror(errno)));
    if (::chmod(path.c_str(), mode) != 0)
      return fail(ErrorCode::io, fmt::format("chmod {:o} {}: {}", mode, path, std::strerror(errno)));
    return true;
  }

  std::string root_;
  GpuReader& gpus_;
  std::unique_ptr<InstanceAccess> mig_;
};

}  // namespace

std::unique_ptr<InstanceAccess> make_whole_gpu_access(std::string root, GpuReader& gpus,
                                                      std::unique_ptr<InstanceAccess> mig) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") root.clear();
  return std::make_unique<WholeGpuAccess>(std::move(root), gpus, std::move(mig));
}

}  // namespace vgpu::agent
