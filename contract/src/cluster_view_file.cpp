#include <algorithm>

#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/contract/guarded_read.h"

namespace vgpu::contract {

Result<void> write_cluster_view_file(FileSystem& fs, const std::string& path, std::string_view text) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
  return atomic_replace(fs, dir, path.substr(slash == std::string::npos ? 0 : slash + 1), text,
                        ReplaceOptions::rebuildable_file(0644));
}

Result<std::string> read_cluster_view_file(FileSystem& fs, const std::string& path, uid_t reader_uid, ViewTrust trust) {
  GuardedRead rule{.what = "cluster view", .max_bytes = kClusterViewMaxBytes, .owners = {0}, .any_owner = false};
  if (reader_uid != 0) rule.owners.push_back(reader_uid);
  rule.any_owner = trust == ViewTrust::signature;
  auto text = read_guarded(fs, path, rule);
  if (!text) return std::unexpected(text.error());
  return std::move(text->text);
}

}  // namespace vgpu::contract
