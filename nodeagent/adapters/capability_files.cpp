// InstanceAccess over the driver's capability device files. A process can use a MIG instance only
// if it can open the instance's GPU-instance and compute-instance capability files
// (/dev/nvidia-caps/nvidia-cap<N>, minors in /proc/driver/nvidia-caps/mig-minors): the driver
// checks that the descriptor it is handed is an open of exactly that device
// (nv-caps.c:nv_cap_validate_and_dup_fd), and root passes anyway. So owner and mode of those two
// files decide who can use the instance, on every Slurm release and with or without cgroups:
// granted, they are <uid> 0400; otherwise root 0400. An instance several users share (MPS across
// users) is its first user's 0440, the others named in the files' access ACL with read access.
//
// nvidia-modprobe (setuid root, run by the CUDA user-space driver of any user) resets a capability
// file to the mode the driver states for it unless that capability says "DeviceFileModify: 0".
// The driver takes that setting per capability from a write to its procfs access file
// (nv-caps.c:nv_cap_procfs_release), so each instance's two capabilities are pinned before their
// files are touched, and the module-wide NVreg_ModifyDeviceFiles can stay as the site has it.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "adapters.h"
#include "read_acl.h"
#include "vgpu/backend/backend_devices.h"
#include "vgpu/ledger/share_groups.h"

namespace vgpu::agent {
namespace {

constexpr mode_t kOwnerReadOnly = 0400;

std::string errno_text(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

// The character-device major the driver registered for its capability files ("<major> nvidia-caps"
// in /proc/devices): what a file missing under /dev/nvidia-caps is created with.
Result<unsigned> caps_major(const std::string& proc_devices) {
  std::ifstream in(proc_devices);
  if (!in) return fail(ErrorCode::unavailable, fmt::format("{}: cannot open", proc_devices));
  std::string line;
  bool in_character_devices = false;
  while (std::getline(in, line)) {
    if (line == "Character devices:") in_character_devices = true;
    else if (line == "Block devices:")
      in_character_devices = false;
    else if (in_character_devices) {
      std::istringstream fields(line);
      unsigned major = 0;
      std::string name;
      if (fields >> major >> name && name == "nvidia-caps" && fields.eof()) return major;
    }
  }
  return fail(ErrorCode::not_found,
              fmt::format("{}: no nvidia-caps character device (is the nvidia driver loaded?)", proc_devices));
}

class CapabilityFileAccess final : public InstanceAccess {
 public:
  CapabilityFileAccess(std::string root, GpuReader& gpus) : root_(std::move(root)), gpus_(gpus) {}

  Result<void> grant(const LedgerInstance& instance, unsigned uid) override { return set_owner(instance, uid); }
  Result<void> revoke(const LedgerInstance& instance) override { return set_owner(instance, 0); }

  Result<void> grant_users(const LedgerInstance& instance, const std::vector<std::string>& users) override {
    if (users.empty()) return revoke(instance);
    auto uids = uids_of(users);
    if (!uids) return std::unexpected(uids.error());
    if (auto owned = set_owner(instance, uids->front()); !owned) return owned;
    if (uids->size() == 1) return {};
    auto files = files_of(instance);
    if (!files) return std::unexpected(files.error());
    const std::vector<unsigned> others(uids->begin() + 1, uids->end());
    for (const auto& f : *files)
      if (auto ok = set_users_acl(f.device, others, AclAccess::read); !ok) return ok;
    return {};
  }

  Result<int> secure_unheld(const Ledger& ledger) override {
    // A node with no MIG GPU has no capability to secure (and may have no driver to ask).
    if (ledger.gpus.empty()) return 0;
    if (auto ok = load_minors(); !ok) return std::unexpected(ok.error());
    int changed = 0;
    for (const auto& gpu : ledger.gpus) {
      auto gpu_minor = device_minor(gpu.index);
      if (!gpu_minor) return std::unexpected(gpu_minor.error());
      for (const auto& e : minors_->of_gpu(*gpu_minor)) {
        const bool held = std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) {
          return instance_is_held(ledger, i) && i.gpu == gpu.index && i.gpu_instance_id == e.gi &&
                 (!e.ci || i.compute_instance_id == *e.ci);
        });
        if (held) continue;
        const std::string device = fmt::format("{}/dev/nvidia-caps/nvidia-cap{}", root_, e.minor);
        struct stat st {};
        if (::lstat(device.c_str(), &st) != 0) {
          if (errno == ENOENT) continue;  // made root-only when an instance needs it
          return fail(ErrorCode::io, errno_text("stat", device));
        }
        if (st.st_uid == 0 && st.st_gid == 0 && (st.st_mode & 07777) == kOwnerReadOnly) continue;
        // A capability that exists now (an instance no job holds) is pinned first, as in set_owner.
        if (const auto access = access_path(*gpu_minor, e.gi, e.ci); ::access(access.c_str(), F_OK) == 0)
          if (auto ok = pin(access); !ok) return std::unexpected(ok.error());
        if (auto ok = set_file_owner(device, e.minor, 0); !ok) return std::unexpected(ok.error());
        ++changed;
      }
    }
    return changed;
  }

 private:
  Result<void> set_owner(const LedgerInstance& instance, unsigned uid) {
    auto files = files_of(instance);
    if (!files) return std::unexpected(files.error());
    for (const auto& f : *files)
      if (auto ok = pin(f.access); !ok) return ok;
    for (const auto& f : *files)
      if (auto ok = set_file_owner(f.device, f.minor, uid); !ok) return ok;
    return {};
  }

  // The driver's own setting, so nvidia-modprobe leaves the file's owner and mode alone.
  static Result<void> pin(const std::string& access) {
    constexpr std::string_view kNoModify = "DeviceFileModify: 0\n";
    int fd = ::open(access.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return fail(ErrorCode::io, errno_text("open", access));
    const ssize_t n = ::write(fd, kNoModify.data(), kNoModify.size());
    const int write_errno = n < 0 ? errno : EIO;
    // The driver applies the setting when the file is closed, so a failed close is a failed write.
    const bool closed = ::close(fd) == 0;
    if (n != static_cast<ssize_t>(kNoModify.size())) {
      errno = write_errno;
      return fail(ErrorCode::io, errno_text("write DeviceFileModify: 0 to", access));
    }
    if (!closed) return fail(ErrorCode::io, errno_text("close", access));
    return {};
  }

  // Mode first, then owner: in between the file is root's alone, never anyone's to read. The mode
  // also masks out the users a former ACL named; the ACL then goes.
  Result<void> set_file_owner(const std::string& path, int minor, unsigned uid) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return fail(ErrorCode::io, errno_text("stat", path));
      // Missing: the driver leaves creating it to nvidia-modprobe, which a node with
      // NVreg_ModifyDeviceFiles=0 never runs for it.
      auto major = caps_major(root_ + "/proc/devices");
      if (!major) return std::unexpected(major.error().within(path));
      if (::mknod(path.c_str(), S_IFCHR | kOwnerReadOnly, makedev(*major, static_cast<unsigned>(minor))) != 0 &&
          errno != EEXIST)
        return fail(ErrorCode::io, errno_text("mknod", path));
      if (::lstat(path.c_str(), &st) != 0) return fail(ErrorCode::io, errno_text("stat", path));
    }
    // A symbolic link or anything else there is not the driver's: refuse rather than follow it.
    if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
      return fail(ErrorCode::corrupt, fmt::format("{}: not a character device", path));
    if (::chmod(path.c_str(), kOwnerReadOnly) != 0) return fail(ErrorCode::io, errno_text("chmod 0400", path));
    if (auto ok = remove_acl(path); !ok) return ok;
    if (::chown(path.c_str(), static_cast<uid_t>(uid), 0) != 0)
      return fail(ErrorCode::io, errno_text(fmt::format("chown {}:0", uid), path));
    return {};
  }

  struct CapabilityFile {
    std::string device;  // /dev/nvidia-caps/nvidia-cap<minor>
    int minor = 0;
    std::string access;  // its /proc/driver/nvidia/capabilities/.../access
  };

  Result<void> load_minors() {
    if (minors_) return {};
    auto loaded = MigMinors::load(root_ + std::string(kMigMinorsPath));
    if (!loaded) return std::unexpected(loaded.error().within("cannot confine MIG instances"));
    minors_ = std::move(*loaded);
    return {};
  }

  std::string access_path(int gpu_minor, int gi, std::optional<int> ci) const {
    auto dir = fmt::format("{}/proc/driver/nvidia/capabilities/gpu{}/mig/gi{}", root_, gpu_minor, gi);
    return ci ? fmt::format("{}/ci{}/access", dir, *ci) : dir + "/access";
  }

  Result<std::vector<CapabilityFile>> files_of(const LedgerInstance& instance) {
    if (auto ok = load_minors(); !ok) return std::unexpected(ok.error());
    auto gpu_minor = device_minor(instance.gpu);
    if (!gpu_minor) return std::unexpected(gpu_minor.error());
    auto gi = minors_->gi_access(*gpu_minor, instance.gpu_instance_id);
    auto ci = minors_->ci_access(*gpu_minor, instance.gpu_instance_id, instance.compute_instance_id);
    if (!gi || !ci)
      return fail(ErrorCode::not_found,
                  fmt::format("{}{}: no gpu{}/gi{}/ci{}/access entry", root_, kMigMinorsPath, *gpu_minor,
                              instance.gpu_instance_id, instance.compute_instance_id));
    auto device = [&](int minor) { return fmt::format("{}/dev/nvidia-caps/nvidia-cap{}", root_, minor); };
    return std::vector<CapabilityFile>{
        {device(*gi), *gi, access_path(*gpu_minor, instance.gpu_instance_id, std::nullopt)},
        {device(*ci), *ci, access_path(*gpu_minor, instance.gpu_instance_id, instance.compute_instance_id)}};
  }

  // mig-minors names GPUs by device minor (/dev/nvidia<minor>), the ledger by NVML index.
  Result<int> device_minor(int index) {
    if (auto it = gpu_minors_.find(index); it != gpu_minors_.end()) return it->second;
    auto gpus = gpus_.discover();
    if (!gpus) return std::unexpected(gpus.error().within("GPU device minors"));
    for (const auto& g : *gpus) gpu_minors_[g.index] = g.minor;
    auto it = gpu_minors_.find(index);
    if (it == gpu_minors_.end() || it->second < 0)
      return fail(ErrorCode::not_found, fmt::format("GPU {}: device minor unknown", index));
    return it->second;
  }

  std::string root_;
  GpuReader& gpus_;
  std::optional<MigMinors> minors_;
  std::map<int, int> gpu_minors_;
};

}  // namespace

std::unique_ptr<InstanceAccess> make_capability_file_access(std::string root, GpuReader& gpus) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") root.clear();
  return std::make_unique<CapabilityFileAccess>(std::move(root), gpus);
}

}  // namespace vgpu::agent
