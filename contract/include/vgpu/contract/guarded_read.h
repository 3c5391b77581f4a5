// Reading a file whose content steers a node or a job: the demand file, the policy, the ledger,
// job records, the viz configuration. Whoever can put something else at such a path chooses what
// the node does, and a reader that blocks on it stops the node. So every such read follows one
// rule, held here:
//   - opened with O_NOFOLLOW (a symlink at the path is refused, never followed) and O_NONBLOCK
//     (a FIFO or a device at the path cannot hang the reader in open or read);
//   - checked on that descriptor, never by name (the name can change in between): a regular file,
//     owned by one of the owners the reader trusts, not writable by group or others, no larger
//     than the reader's cap;
//   - read to the cap and no further, whatever the file grows to meanwhile.
// Errors name the file and why: not_found when nothing is at the path, unavailable when what is
// there is refused, io when a syscall failed, corrupt when it outgrew the cap while being read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/contract/file_ops.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::contract {

struct GuardedRead {
  std::string_view what = "file";  // "demand file", "policy": the first words of every error
  std::uint64_t max_bytes = 16u << 20;
  // Owners trusted; empty: root and the reading process's effective user.
  std::vector<uid_t> owners;
  // Any owner and mode: for a file whose content carries its own proof (a signed cluster view on
  // NFS with root squash, where root's file is someone else's).
  bool any_owner = false;
};

struct GuardedText {
  std::string text;
  FileInfo info;  // of the descriptor that was read
};

// The flags every guarded open uses, for callers that keep the descriptor (the ledger's store).
int guarded_open_flags();

// The open alone, for readers with checks of their own wording: not_found when nothing is at the
// path, unavailable for a symbolic link, io otherwise.
Result<file_ops::File> open_guarded(FileSystem& fs, const std::string& path, std::string_view what);

// Why `info` is refused under `rule` ("" when it is trusted), for callers that open themselves.
std::string guarded_refusal(const FileInfo& info, const GuardedRead& rule);

Result<GuardedText> read_guarded(FileSystem& fs, const std::string& path, const GuardedRead& rule);

}  // namespace vgpu::contract
