// InstanceAccess over AMD render nodes. A process uses a GPU partition through /dev/kfd (shared by
// every GPU) and the partition's /dev/dri/renderD<N>: KFD takes the render node's descriptor to set
// up the process's GPU address space, so without the render node there is no partition to use.
// Owner and mode of the render node therefore decide who can use the partition: granted, it is
// <uid> 0600; otherwise root 0600 (the distribution's default, root:render 0660, would let every
// member of group render in). Only the partitions of the GPU's current mode can be opened at all
// (the driver refuses the others with ENOENT), so those are the ones secured.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "adapters.h"
#include "amdgpu_backend.h"
#include "vgpu/ledger/share_groups.h"

namespace vgpu::agent {
namespace {

constexpr mode_t kOwnerOnly = 0600;

class RenderNodeAccess final : public InstanceAccess {
 public:
  RenderNodeAccess(std::string root, amdgpu::Backend& backend) : root_(std::move(root)), backend_(backend) {}

  Result<void> grant(const LedgerInstance& instance, unsigned uid) override { return set_owner(instance, uid); }
  Result<void> revoke(const LedgerInstance& instance) override { return set_owner(instance, 0); }
  // Shares of an instance are CUDA MPS's (docs/shared-instances.md): no share type is realized
  // on an AMD model, so no prolog asks this.
  Result<void> grant_users(const LedgerInstance& instance, const std::vector<std::string>&) override {
    return fail(ErrorCode::unavailable,
                fmt::format("{}: shares of an instance are not offered on AMD partitions", instance.mig_uuid));
  }

  Result<int> secure_unheld(const Ledger& ledger) override {
    int changed = 0;
    for (const auto& gpu : ledger.gpus) {
      auto parts = backend_.partitions(gpu.index);
      if (!parts) return std::unexpected(parts.error());
      for (const auto& p : *parts) {
        const bool held = std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) {
          return instance_is_held(ledger, i) && i.gpu == gpu.index && i.gpu_instance_id == p.id;
        });
        if (held) continue;
        auto was = chown_to(path_of(p.render_minor), 0);
        if (!was) return std::unexpected(was.error());
        if (*was) ++changed;
      }
    }
    return changed;
  }

 private:
  std::string path_of(int minor) const { return fmt::format("{}/dev/dri/renderD{}", root_, minor); }

  Result<void> set_owner(const LedgerInstance& instance, unsigned uid) {
    auto parts = backend_.partitions(instance.gpu);
    if (!parts) return std::unexpected(parts.error());
    auto p = std::ranges::find(*parts, instance.gpu_instance_id, &amdgpu::Partition::id);
    if (p == parts->end())
      return fail(ErrorCode::not_found,
                  fmt::format("GPU {}: partition {} is not in KFD's topology", instance.gpu, instance.gpu_instance_id));
    auto changed = chown_to(path_of(p->render_minor), uid);
    if (!changed) return std::unexpected(changed.error());
    return {};
  }

  // Mode first, then owner: in between the node is root's alone. Whether anything changed.
  static Result<bool> chown_to(const std::string& path, unsigned uid) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
      return fail(ErrorCode::io, fmt::format("stat {}: {}", path, std::strerror(errno)));
    // A symbolic link or a directory there is not the driver's: refuse rather than follow it.
    if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
      return fail(ErrorCode::io, fmt::format("{}: not a device file", path));
    if (st.st_uid == uid && st.st_gid == 0 && (st.st_mode & 07777) == kOwnerOnly) return false;
    if (::chmod(path.c_str(), kOwnerOnly) != 0)
      return fail(ErrorCode::io, fmt::format("chmod {}: {}", path, std::strerror(errno)));
    if (::chown(path.c_str(), uid, 0) != 0)
      return fail(ErrorCode::io, fmt::format("chown {}: {}", path, std::strerror(errno)));
    return true;
  }

  std::string root_;
  amdgpu::Backend& backend_;
};

}  // namespace

std::unique_ptr<InstanceAccess> make_render_node_access(std::string root, amdgpu::Backend& backend) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") root.clear();
  return std::make_unique<RenderNodeAccess>(std::move(root), backend);
}

}  // namespace vgpu::agent
