// Replacing a state file so that readers see the old or the new content, never a mix, even if the
// writer dies at any instant: write a temporary file beside it, rename it over the target. Every
// state file the node writes goes through here and so through the FileSystem seam the fault
// tests drive (contract/test/atomic_file_test.cpp). No exceptions (the plugin calls it).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/crash_point.h"
#include "vgpu/base/error.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::contract {

struct ReplaceOptions {
  unsigned mode = 0600;  // applied with fchmod, whatever the umask
  // fsync the file before the rename and the directory after it: the new content survives a
  // power cut. Without it a crash of the process still leaves old-or-new, never a mix.
  bool durable = true;
  // Crash points (base/crash_point.h) after the temporary is written and after the rename; none
  // when unset.
  std::optional<CrashPointName> crash_after_temp_write;
  std::optional<CrashPointName> crash_after_rename;
  // Where the temporary is written; empty: beside the target. It must be on the same filesystem,
  // and be used where readers scan the target's directory (websockify reads every file of its
  // token directory).
  std::string_view temp_dir;
  // uid and gid the file gets before any content is written (a secret only its user may read).
  std::optional<std::pair<uid_t, gid_t>> owner;

  // Named starting points instead of designated initializers (GCC 12 flags every field such an
  // initializer leaves out under -Wextra).
  static ReplaceOptions durable_file(unsigned file_mode) {
    ReplaceOptions o;
    o.mode = file_mode;
    return o;
  }
  // A file its writer rebuilds after a crash or reboot (not worth two fsyncs per write).
  static ReplaceOptions rebuildable_file(unsigned file_mode) {
    ReplaceOptions o = durable_file(file_mode);
    o.durable = false;
    return o;
  }
  ReplaceOptions with_crash_points(CrashPointName after_temp_write, CrashPointName after_rename) const {
    ReplaceOptions o = *this;
    o.crash_after_temp_write = after_temp_write;
    o.crash_after_rename = after_rename;
    return o;
  }
  ReplaceOptions with_temp_dir(std::string_view dir) const {
    ReplaceOptions o = *this;
    o.temp_dir = dir;
    return o;
  }
};

// Replaces <dir>/<name> with `text`. The temporary is <temp dir>/<name>.tmp.<pid>; a failure before
// the rename removes it and leaves the target as it was.
Result<void> atomic_replace(FileSystem& fs, const std::string& dir, const std::string& name, std::string_view text,
                            const ReplaceOptions& options = {});

// The temporary name atomic_replace uses for <name>: "<name>.tmp." followed by the writer's pid.
std::string atomic_temp_prefix(std::string_view name);

}  // namespace vgpu::contract
