// What every vgpu-viz command shares: the parsed options, and the opened config + adapters.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

#include "access_text.h"
#include "hypervisor.h"
#include "proxy.h"
#include "session_manager.h"
#include "sysfs.h"
#include "viz_config.h"

namespace vgpu::viz::tool {

struct Options {
  std::string config_path;
  std::string policy_path;  // pools from the slurm-vgpu policy file (env VGPU_POLICY)
  std::string job;
  std::string pool;
  std::string image;
  std::string geometry;
  std::string user;
  std::string job_name;
  std::string cpuset;
  std::string device;
  std::string gpu_instance;
  std::string access_file;
  std::string ood_connection;  // step mode: keep OnDemand's connection.yml here up to date
  std::string owner;           // user the access file belongs to (Slurm sessions)
  bool guard = false;
  std::string live;
  std::string out;
};

struct Context {
  VizConfig config;
  std::unique_ptr<Hypervisor> hv;
  std::unique_ptr<RootedSysfs> sysfs;
  std::unique_ptr<WebsockifyProxy> proxy;
  std::unique_ptr<WebsockifySessionProxy> ood;  // only with VizConfig::ood_listen_address
  std::unique_ptr<SessionManager> sessions;
};

// The viz config, with the policy's pools merged in when a policy is named.
Result<VizConfig> load_config(const Options& o);
// Config + libvirt + sysfs + session manager, ready for any command.
Result<std::unique_ptr<Context>> open_context(const Options& o);

struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};
// The account a Slurm session's access file belongs to; `user` is a name or a numeric uid.
Result<Owner> resolve_owner(const std::string& user);

// Where a Slurm session's "how to connect" text lives for `job`.
std::string access_path(const VizConfig& config, std::uint32_t job);

// Replaces `path` atomically with `text`, mode 0600, owned by `owner` (root writes it for the
// job's user). The directory must be root-owned, so nobody can plant a link in it.
Result<void> write_access_file(const std::string& path, const std::string& text, std::optional<Owner> owner);

// Writes Open OnDemand's connection file (0600, the caller's) from a session's access text; fails
// when the session has no OnDemand websocket (the node's viz.json has no ood_listen_address).
Result<void> write_ood_connection(const std::string& path, std::string_view access);

int report(const Error& e);

}  // namespace vgpu::viz::tool
