// The node's viz configuration: pools (what a session may look like) and the settings of the
// host side (libvirt URI, proxy address, directories). Admin-written JSON, versioned, parsed
// strictly: an unknown key is an error, because a misspelt "listen" must not silently fall
// back to a default that exposes VNC.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "validate.h"
#include "vgpu/base/error.h"

namespace vgpu::viz {

enum class AttachKind { none, mdev, sriov_vf, mig_vgpu, passthrough };
enum class DisplayKind { vnc, spice };

std::string_view to_string(AttachKind kind);
Result<AttachKind> parse_attach_kind(std::string_view text);

struct ImageSpec {
  std::string kernel;   // absolute path
  std::string initrd;   // absolute path
  std::string cmdline;  // kernel command line
  std::string disk;     // optional absolute path of a qcow2/raw disk; empty = none
};

// One viz pool. The policy component carries the same fields in the partition policy file;
// this is the frontend's own copy so the frontend builds and tests on its own.
struct VizPoolSpec {
  std::string name;
  AttachKind attach = AttachKind::none;
  std::string gpu_type;  // mdev type id ("nvidia-700"), vGPU type name for VFs, unused otherwise
  ImageSpec image;
  unsigned memory_mib = 512;
  unsigned vcpus = 1;
  DisplayKind display = DisplayKind::vnc;
  Geometry max_geometry{1920, 1200};
};

struct VizConfig {
  std::string libvirt_uri = "qemu:///system";
  std::string listen_address = "127.0.0.1";  // where VNC and websockify listen
  std::uint16_t proxy_port = 6080;
  std::string public_host = "localhost";  // what the printed URL names (after ssh -L)
  std::string ssh_host;                   // node name for the ssh -L hint; empty = hostname
  std::string state_dir = "/run/slurm-vgpu/viz";
  // Where Slurm sessions leave each job's "how to connect" file (<access_dir>/<job>, 0600, owned by
  // the job's user): the user's step reads it without any libvirt rights. Root-owned, 0711.
  std::string access_dir = "/run/slurm-vgpu/viz-access";
  std::string sysfs_root = "/";
  std::string novnc_dir = "/usr/share/novnc";
  std::string websockify = "/usr/bin/websockify";
  std::string emulator = "/usr/bin/qemu-system-x86_64";
  // "auto": KVM whenever a guest starts with it, else TCG (accelerator.h); "tcg": TCG always
  // (a node whose KVM misbehaves, and the test machines, whose e2e runs on TCG).
  std::string accelerator = "auto";
  // Where the GPU's CPU locality comes from, to pin a session's vCPUs next to its GPU: "" (no
  // pinning), "live" (hwloc on this machine) or an absolute path to an `lstopo --of xml` export.
  // A session started with an explicit --cpuset keeps that.
  std::string topology;
  std::map<std::string, VizPoolSpec> pools;
  std::map<std::string, ImageSpec> images;  // named images a user may pick with --image
  // Open OnDemand (docs/viz.md): OnDemand's proxy reaches a session at <host>:<port>/websockify,
  // with no room for our token, so with `ood_listen_address` set each VNC session also gets its
  // own websockify on that address, on a free port in [ood_port_min, ood_port_max]. "" = off.
  std::string ood_listen_address;
  std::string ood_host;  // the name OnDemand's proxy uses for this node; "" = the hostname
  std::uint16_t ood_port_min = 20000;
  std::uint16_t ood_port_max = 20999;
};

// Parses the JSON text of a config; `origin` names the file in error messages.
Result<VizConfig> parse_viz_config(std::string_view json_text, std::string_view origin);
Result<VizConfig> load_viz_config(const std::string& path);

}  // namespace vgpu::viz
