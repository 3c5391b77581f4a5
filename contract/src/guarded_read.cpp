#include "vgpu/contract/guarded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "vgpu/contract/file_ops.h"

namespace vgpu::contract {
namespace {

std::string mode_text(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

std::string owners_text(const std::vector<uid_t>& owners) {
  std::string out;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    if (i) out += i + 1 == owners.size() ? " or " : ", ";
    out += "uid " + std::to_string(owners[i]);
  }
  return out;
}

std::vector<uid_t> trusted_owners(const GuardedRead& rule) {
  if (!rule.owners.empty()) return rule.owners;
  std::vector<uid_t> owners{0};
  if (::geteuid() != 0) owners.push_back(::geteuid());
  return owners;
}

std::string too_large(const FileInfo& info, const GuardedRead& rule) {
  return std::to_string(info.size) + " bytes, over the " + std::to_string(rule.max_bytes) + " byte limit";
}

}  // namespace

int guarded_open_flags() { return O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC; }

std::string guarded_refusal(const FileInfo& info, const GuardedRead& rule) {
  if (!info.is_regular) return info.is_directory ? "a directory, not a regular file" : "not a regular file";
  if (rule.any_owner) return info.size > rule.max_bytes ? too_large(info, rule) : std::string();
  const auto owners = trusted_owners(rule);
  if (std::ranges::find(owners, info.owner) == owners.end())
    return "owned by uid " + std::to_string(info.owner) + " (trusted: " + owners_text(owners) + ")";
  if (info.mode & 022)
    return "mode " + mode_text(info.mode) + " lets " + ((info.mode & 002) ? "everyone" : "its group") + " write it";
  if (info.size > rule.max_bytes) return too_large(info, rule);
  return {};
}

Result<file_ops::File> open_guarded(FileSystem& fs, const std::string& path, std::string_view what) {
  SysResult<int> fd = fs.open(path, guarded_open_flags(), 0);
  while (!fd && fd.error() == EINTR) fd = fs.open(path, guarded_open_flags(), 0);
  if (fd) return file_ops::File(fs, *fd, path);
  const std::string which = what.empty() ? path : std::string(what) + " " + path;
  if (fd.error() == ENOENT) return fail(ErrorCode::not_found, which + ": no such file");
  // ELOOP: O_NOFOLLOW met a symbolic link as the last component.
  if (fd.error() == ELOOP) return fail(ErrorCode::unavailable, which + ": refused: a symbolic link (never followed)");
  const Error error = file_ops::sys_error("open", path, fd.error());
  return std::unexpected(what.empty() ? error : error.within(std::string(what)));
}

Result<GuardedText> read_guarded(FileSystem& fs, const std::string& path, const GuardedRead& rule) {
  auto file = open_guarded(fs, path, rule.what);
  if (!file) return std::unexpected(file.error());
  auto info = file->fstat();
  if (!info) return std::unexpected(info.error().within(std::string(rule.what)));
  if (auto why = guarded_refusal(*info, rule); !why.empty())
    return fail(ErrorCode::unavailable, std::string(rule.what) + " " + path + ": refused: " + why);
  auto text = file->read_all(rule.max_bytes);
  if (!text) return std::unexpected(text.error().within(std::string(rule.what)));
  return GuardedText{std::move(*text), *info};
}

}  // namespace vgpu::contract
