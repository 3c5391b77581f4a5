#include "vgpu/contract/demand_file.h"

#include <algorithm>
#include <cstdio>

#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/file_ops.h"
#include "vgpu/contract/guarded_read.h"

namespace vgpu::contract {

Result<void> write_demand_file(FileSystem& fs, const std::string& path, std::string_view text) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
  return atomic_replace(fs, dir, path.substr(slash == std::string::npos ? 0 : slash + 1), text,
                        ReplaceOptions::rebuildable_file(0644));
}

Result<std::string> read_demand_file(FileSystem& fs, const std::string& path, uid_t reader_uid, std::int64_t now) {
  auto refused = [&](const std::string& why) {
    return fail(ErrorCode::unavailable, "demand file " + path + ": " + why);
  };
  // Never follows a symlink, never blocks on a FIFO, and checks the descriptor it reads (guarded_read.h).
  auto file = open_guarded(fs, path, "demand file");
  if (!file) return refused("missing or unreadable (" + file.error().message + ")");
  auto info = file->fstat();
  if (!info) return refused("cannot stat (" + info.error().message + ")");
  if (!info->is_regular) return refused("refused: not a regular file");
  if (info->size > kDemandFileMaxBytes)
    return refused("refused: " + std::to_string(info->size) + " bytes, over the " +
                   std::to_string(kDemandFileMaxBytes) + " byte limit");
  if ((info->owner != 0 && info->owner != reader_uid) || (info->mode & 022)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", info->mode & 07777);
    return refused("refused: owner uid " + std::to_string(info->owner) + ", mode " + mode + " (want root or uid " +
                   std::to_string(reader_uid) + ", not writable by group or others)");
  }
  auto text = file->read_all(kDemandFileMaxBytes);
  if (!text) return refused("cannot read (" + text.error().message + ")");
  const std::int64_t age = now - info->mtime;
  if (age > kDemandFileMaxAgeS) return refused("stale (" + std::to_string(age) + " s old)");
  return *text;
}

}  // namespace vgpu::contract
