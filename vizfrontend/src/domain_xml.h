// libvirt domain XML for a viz session, generated from a fixed template. Every value that is
// not a literal of this file is validated upstream and escaped here as well (defence in depth).
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "accelerator.h"
#include "validate.h"
#include "viz_config.h"

namespace vgpu::viz {

// What the guest gets as its GPU; produced by a GPU attachment backend.
struct NoGpu {
  friend bool operator==(const NoGpu&, const NoGpu&) = default;
};
struct MdevHostdev {
  std::string uuid;
  friend bool operator==(const MdevHostdev&, const MdevHostdev&) = default;
};
struct PciHostdev {
  std::string address;  // "0000:3b:00.4"
  friend bool operator==(const PciHostdev&, const PciHostdev&) = default;
};
using GpuDevice = std::variant<NoGpu, MdevHostdev, PciHostdev>;

struct DomainRequest {
  std::uint32_t job_id = 0;
  std::string user;      // free text, shown in metadata only
  std::string job_name;  // free text, shown in metadata only
  const VizPoolSpec* pool = nullptr;
  ImageSpec image;
  Geometry geometry{1024, 768};
  std::string cpuset;  // empty = no pinning
  std::string listen_address = "127.0.0.1";
  std::string display_password;  // VNC/SPICE password; never logged
  std::string serial_log;        // absolute path for the guest's serial console
  std::string emulator = "/usr/bin/qemu-system-x86_64";
  Accelerator accelerator = Accelerator::tcg;
  GpuDevice gpu;
};

// Fails on a request that violates the pool (geometry above max_geometry, missing pool,
// bad cpuset, bad listen address); never on content that merely needs escaping.
Result<std::string> render_domain_xml(const DomainRequest& request);

// XML of the <graphics> element alone, as the domain is defined with it and as
// virDomainUpdateDeviceFlags wants it for a password change. VNC listens on a UNIX socket
// (`vnc_socket`: the live domain's, empty to let libvirt choose); SPICE on `listen_address`:`port`.
std::string render_graphics_xml(DisplayKind display, std::string_view listen_address, std::string_view password,
                                int port, std::string_view vnc_socket = {});

}  // namespace vgpu::viz
