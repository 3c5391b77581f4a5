#include "read_acl.h"

#include <pwd.h>
#include <sys/xattr.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace vgpu::agent {
namespace {

constexpr const char* kAccessAcl = "system.posix_acl_access";

// include/uapi/linux/posix_acl_xattr.h and posix_acl.h: a little-endian version 2 header, then
// entries {le16 tag, le16 perm, le32 id} sorted by tag, then by id.
constexpr std::uint32_t kVersion = 2;
constexpr std::uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kMask = 0x10, kOther = 0x20;
constexpr std::uint16_t kRead = 4, kWrite = 2;
constexpr std::uint32_t kUndefinedId = 0xffffffffu;

void put(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void entry(std::string& out, std::uint16_t tag, std::uint16_t perm, std::uint32_t id) {
  put(out, tag, 2);
  put(out, perm, 2);
  put(out, id, 4);
}

}  // namespace

Result<void> set_users_acl(const std::string& path, const std::vector<unsigned>& users, AclAccess access) {
  const std::uint16_t perm = access == AclAccess::read ? kRead : kRead | kWrite;
  std::vector<unsigned> ids = users;
  std::ranges::sort(ids);
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string acl;
  put(acl, kVersion, 4);
  entry(acl, kUserObj, perm, kUndefinedId);
  for (unsigned id : ids) entry(acl, kUser, perm, id);
  entry(acl, kGroupObj, 0, kUndefinedId);
  entry(acl, kMask, perm, kUndefinedId);
  entry(acl, kOther, 0, kUndefinedId);
  if (::setxattr(path.c_str(), kAccessAcl, acl.data(), acl.size(), 0) != 0)
    return fail(ErrorCode::io,
                fmt::format("setting the access ACL of {} ({} for uids {}): {}{}", path,
                            access == AclAccess::read ? "read" : "read-write", fmt::join(ids, ","),
                            std::strerror(errno), errno == EOPNOTSUPP ? " (its file system takes no ACLs)" : ""));
  return {};
}

Result<void> remove_acl(const std::string& path) {
  if (::removexattr(path.c_str(), kAccessAcl) != 0 && errno != ENODATA && errno != EOPNOTSUPP)
    return fail(ErrorCode::io, fmt::format("removing the access ACL of {}: {}", path, std::strerror(errno)));
  return {};
}

Result<std::vector<unsigned>> uids_of(const std::vector<std::string>& users) {
  std::vector<unsigned> uids;
  for (const auto& user : users) {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buffer(16384);
    const int rc = ::getpwnam_r(user.c_str(), &pw, buffer.data(), buffer.size(), &found);
    if (rc != 0 || found == nullptr)
      return fail(ErrorCode::not_found,
                  fmt::format("user '{}': {}", user, rc != 0 ? std::strerror(rc) : "not known on this node"));
    uids.push_back(static_cast<unsigned>(pw.pw_uid));
  }
  return uids;
}

}  // namespace vgpu::agent
