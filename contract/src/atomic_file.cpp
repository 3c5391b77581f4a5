#include "vgpu/contract/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "vgpu/base/crash_point.h"
#include "vgpu/contract/file_ops.h"

namespace vgpu::contract {

std::string atomic_temp_prefix(std::string_view name) { return std::string(name) + ".tmp."; }

Result<void> atomic_replace(FileSystem& fs, const std::string& dir, const std::string& name, std::string_view text,
                            const ReplaceOptions& options) {
  const std::string path = dir + "/" + name;
  const std::string temp_dir = options.temp_dir.empty() ? dir : std::string(options.temp_dir);
  const std::string temp = temp_dir + "/" + atomic_temp_prefix(name) + std::to_string(::getpid());
  auto crash = [](const std::optional<CrashPointName>& point) {
    if (point) crash_point(*point);
  };
  auto written = [&]() -> Result<void> {
    auto file = file_ops::open(fs, temp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, options.mode);
    if (!file) return std::unexpected(file.error());
    if (options.owner)
      if (auto r = file->fchown(options.owner->first, options.owner->second); !r) return r;
    if (auto r = file->fchmod(options.mode); !r) return r;  // the umask filtered open's mode
    if (auto r = file->write_all(text); !r) return r;
    if (options.durable)
      if (auto r = file->fsync(); !r) return r;
    crash(options.crash_after_temp_write);
    if (auto r = file->close(); !r) return r;
    return file_ops::rename(fs, temp, path);
  }();
  if (!written) {
    (void)fs.unlink(temp);  // best effort; the writer's next call replaces it anyway
    return std::unexpected(written.error().within(path + " not changed"));
  }
  crash(options.crash_after_rename);
  if (!options.durable) return {};
  // Make the rename itself durable. If this fails the new content is already what readers see.
  auto synced = [&]() -> Result<void> {
    auto d = file_ops::open(fs, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!d) return std::unexpected(d.error());
    if (auto r = d->fsync(); !r) return r;
    return d->close();
  }();
  if (!synced) return std::unexpected(synced.error().within(path + " replaced but may not survive a power loss"));
  return {};
}

}  // namespace vgpu::contract
