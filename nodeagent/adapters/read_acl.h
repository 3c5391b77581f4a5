// Access for named users through a file's POSIX access ACL (acl(5)), written as the kernel's
// "system.posix_acl_access" extended attribute so the node needs no libacl. Used for the files of
// an instance several users' jobs share: read for MIG capability files, read and write for a whole
// GPU's /dev/nvidia<N>.
#pragma once

#include <string>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::agent {

enum class AclAccess { read, read_write };

// Gives the owner and every uid of `users` `access`; nobody else (group, other) gets any. Replaces
// whatever ACL the file had. The file's mode afterwards reads 0440 (0660 for read_write): the
// group bits of a file with an ACL show its mask.
Result<void> set_users_acl(const std::string& path, const std::vector<unsigned>& users, AclAccess access);

// Removes the file's access ACL, so its mode alone decides again. Nothing there is success.
Result<void> remove_acl(const std::string& path);

// The users' uids on this node (getpwnam_r), in the same order; an error names the first unknown.
Result<std::vector<unsigned>> uids_of(const std::vector<std::string>& users);

}  // namespace vgpu::agent
