// Whether the resident planner may do a hook's work: only with the policy file the hook itself
// would read, unchanged since the planner loaded it. A hook reads the policy afresh every time;
// the planner reads it once at start, so after an edit it declines and the hook does the work
// with the new policy (restarting vgpu-planner lets it serve again).
#pragma once

#include <sys/stat.h>

#include <string>

#include "vgpu/contract/hook_request.h"

namespace vgpu::agent {

// The policy file as the planner loaded it, recognised by device, inode, size and mtime (an
// editor's rename, a rewrite in place and a touch all change one of them).
class PolicyIdentity {
 public:
  static PolicyIdentity of(const std::string& path);
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] bool unchanged() const;

 private:
  std::string path_;
  struct stat st_ {};
  bool loaded_ = false;
};

// Empty when the planner may serve `request`; otherwise why not, for the hook's log.
std::string why_not_serve(const contract::HookRequest& request, const PolicyIdentity& policy);

}  // namespace vgpu::agent
