#include "hook_policy_check.h"

namespace vgpu::agent {

PolicyIdentity PolicyIdentity::of(const std::string& path) {
  PolicyIdentity id;
  id.path_ = path;
  id.loaded_ = ::stat(path.c_str(), &id.st_) == 0;
  return id;
}

bool PolicyIdentity::unchanged() const {
  struct stat now {};
  return loaded_ && ::stat(path_.c_str(), &now) == 0 && now.st_ino == st_.st_ino && now.st_dev == st_.st_dev &&
         now.st_size == st_.st_size && now.st_mtim.tv_sec == st_.st_mtim.tv_sec &&
         now.st_mtim.tv_nsec == st_.st_mtim.tv_nsec;
}

std::string why_not_serve(const contract::HookRequest& request, const PolicyIdentity& policy) {
  if (request.policy != policy.path())
    return "the hook's policy " + request.policy + " is not the planner's (" + policy.path() + ")";
  if (!policy.unchanged())
    return "policy " + policy.path() + " changed since the planner started (restart vgpu-planner to serve hooks again)";
  return {};
}

}  // namespace vgpu::agent
