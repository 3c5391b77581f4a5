// Replacing a small state file so that readers see the old or the new content, never a mix: write a
// temporary file beside it, rename it over the target. No exceptions (the plugin calls this).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "vgpu/error.h"

namespace vgpu::gres {

// `durable`: fsync the file and the directory too (survives a power cut, costs two syncs).
Result<void> replace_file_atomically(const std::string& dir, const std::string& name, std::string_view text,
                                     mode_t mode, bool durable);

}  // namespace vgpu::gres
