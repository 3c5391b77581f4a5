// What the session logic needs from a hypervisor. The libvirt adapter implements it; tests use
// libvirt's test:///default driver or a scripted fake to fail at chosen steps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "vgpu/base/error.h"

namespace vgpu::viz {

struct DomainSummary {
  std::string name;
  bool active = false;
};

class Hypervisor {
 public:
  virtual ~Hypervisor() = default;
  // Whether guests of `emulator` can run under KVM here (libvirt's domain capabilities for type
  // kvm); the error says why not. Hypervisors without KVM keep the default.
  virtual Result<void> offers_kvm(std::string_view emulator) {
    return fail(ErrorCode::unavailable, fmt::format("no KVM through this hypervisor ({})", emulator));
  }
  virtual Result<void> define(std::string_view xml) = 0;
  virtual Result<void> start(std::string_view name) = 0;
  // The live domain XML; `secure` includes passwords (never log it).
  virtual Result<std::string> domain_xml(std::string_view name, bool secure) = 0;
  // Replaces the live <graphics> device, which is how libvirt changes a VNC/SPICE password.
  virtual Result<void> update_graphics(std::string_view name, std::string_view graphics_xml) = 0;
  // Writes what the guest's first screen shows, as PNG (libvirt returns PNG for QEMU).
  virtual Result<void> screenshot(std::string_view name, const std::string& path) = 0;
  // Both succeed when there is nothing to do, so teardown can always call them.
  virtual Result<void> destroy(std::string_view name) = 0;
  virtual Result<void> undefine(std::string_view name) = 0;
  virtual Result<std::vector<DomainSummary>> list(std::string_view name_prefix) = 0;
  // Starts counting successful display logins (client passed VNC/SPICE authentication).
  virtual Result<void> watch_logins(std::string_view name) = 0;
  // Waits until a login or timeout_ms, whichever is first; returns the logins seen since the
  // previous call. Callers poll their stop flag between calls, so keep timeout_ms short.
  virtual Result<int> wait_logins(int timeout_ms) = 0;
};

// Opens a libvirt connection ("qemu:///system", "test:///default").
Result<std::unique_ptr<Hypervisor>> open_libvirt(const std::string& uri);

// The port of the first <graphics> element of a live domain XML; -1 while autoport has not
// assigned one (the test driver never does). Pure, so it is unit-tested on captured XML.
Result<int> graphics_port_of(std::string_view domain_xml);
// The UNIX socket of the first <graphics> element's <listen type='socket'>; not_found while it
// has none (before start, or on the test driver).
Result<std::string> graphics_socket_of(std::string_view domain_xml);

}  // namespace vgpu::viz
