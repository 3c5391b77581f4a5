// Small file helpers for the frontend's own files (state, tokens). Atomic replace so a reader
// (websockify, a concurrent `vgpu-viz list`) never sees half a file, and 0600 from creation so a
// secret-bearing file is never briefly world-readable.
#pragma once

#include <string>

#include "vgpu/base/error.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::viz {

// The FileSystem seam the frontend writes through (the real one).
FileSystem& contract_fs();

// contract::atomic_replace of `path`, its temporary written in `tmp_dir` (same filesystem as
// `path`, and not a directory readers scan: websockify reads every file of the token directory).
Result<void> write_file_atomic(const std::string& path, const std::string& tmp_dir, const std::string& content,
                               unsigned mode);
Result<std::string> read_file(const std::string& path);
// Creates the directory and its parents with `mode` (only newly made ones get the mode).
Result<void> make_dirs(const std::string& path, unsigned mode);
// Removes a file; a missing file is success.
Result<void> remove_file(const std::string& path);

}  // namespace vgpu::viz
