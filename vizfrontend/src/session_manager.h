// Viz session lifecycle: start (device -> domain -> display -> token -> record), stop, list,
// reap, password rotation. Every step of start registers its undo; a failure runs the undos in
// reverse, so a failed start leaves no domain, device, token or record behind.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpu_attach.h"
#include "gpu_locality.h"
#include "hypervisor.h"
#include "novnc_url.h"
#include "proxy.h"
#include "secrets.h"
#include "session_record.h"
#include "sysfs.h"
#include "accelerator.h"
#include "viz_config.h"

namespace vgpu::viz {

struct StartRequest {
  std::uint32_t job_id = 0;
  std::string pool;
  std::string image;  // empty = the pool's image
  std::optional<Geometry> geometry;
  std::string user;
  std::string job_name;
  std::string cpuset;        // from hwloc locality of the GPU; empty = no pinning
  std::string device;        // GPU/parent PCI address chosen by the scheduler; empty = any
  std::string gpu_instance;  // mig-vgpu only
};

struct StartedSession {
  SessionRecord record;
  AccessInfo access;
  std::string password;  // for the user only: never log
  // What runs the guest, and why (accelerator.h); empty when this call did not start it.
  std::optional<AcceleratorChoice> accelerator;
};

struct ReapReport {
  std::vector<std::uint32_t> removed;  // jobs whose leftovers were cleaned
  std::vector<std::string> problems;   // what could not be cleaned, with context
};

class SessionManager {
 public:
  // `session_proxy`: per-session proxies for Open OnDemand (VizConfig::ood_listen_address); null = off.
  SessionManager(const VizConfig& config, Hypervisor& hypervisor, Sysfs& sysfs, Proxy& proxy, RandomSource random,
                 SessionProxy* session_proxy = nullptr);

  Result<StartedSession> start(const StartRequest& request);
  // Tears down everything of the job that exists; succeeds when nothing was there.
  Result<void> stop(std::uint32_t job_id);
  Result<std::vector<SessionRecord>> list() const;
  // Stops every session, domain, token and mdev whose job is not in `live_jobs`.
  Result<ReapReport> reap(const std::set<std::uint32_t>& live_jobs);
  // Sets a fresh display password on the running domain and returns it (with its new URL).
  Result<StartedSession> rotate_password(std::uint32_t job_id);

  std::string record_path(std::uint32_t job_id) const;
  // Pins each session's vCPUs near its GPU unless the request names a cpuset (VizConfig::topology).
  void set_cpu_locator(CpuLocator locator) { cpu_locator_ = std::move(locator); }

  std::string token_path(std::uint32_t job_id) const;
  std::string token_dir() const;
  std::string serial_log_path(std::uint32_t job_id) const;

 private:
  Result<void> prepare_dirs() const;
  Result<void> write_token(std::uint32_t job_id, const std::string& token, const std::string& vnc_socket) const;
  Result<std::string> read_token(std::uint32_t job_id) const;
  Result<void> release_attachment(const Attachment& attachment);
  AccessInfo access_for(std::uint32_t job_id, const std::string& token, const std::string& password) const;
  AccessInfo spice_access(int port, const std::string& password) const;
  Result<void> stop_proxy_if_idle();

  const VizConfig& config_;
  Hypervisor& hv_;
  Sysfs& sysfs_;
  Proxy& proxy_;
  RandomSource random_;
  SessionProxy* session_proxy_;
  CpuLocator cpu_locator_;
};

}  // namespace vgpu::viz
