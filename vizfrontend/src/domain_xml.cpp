#include "domain_xml.h"

#include <fmt/format.h>

#include "xml_escape.h"

namespace vgpu::viz {
namespace {

// Where our session metadata lives in the domain XML; a private namespace keeps libvirt from
// interpreting it and lets `reap` recognise our domains beyond the name prefix.
constexpr std::string_view kMetadataNs = "https://slurm-vgpu.invalid/viz/1";

bool plain_listen_address(std::string_view a) {
  if (a.empty() || a.size() > 64) return false;
  for (const char c : a) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

// Enough video RAM for the requested geometry at 32 bpp, doubled for page flipping, in KiB,
// rounded up to a power of two as QEMU's VGA wants it.
unsigned vram_kib(Geometry g) {
  const unsigned long long need = 2ULL * g.width * g.height * 4 / 1024;
  unsigned kib = 16384;
  while (kib < need && kib < 262144U) kib *= 2;
  return kib;
}

std::string hostdev_xml(const GpuDevice& gpu) {
  if (const auto* m = std::get_if<MdevHostdev>(&gpu)) {
    return fmt::format(
        "    <hostdev mode='subsystem' type='mdev' model='vfio-pci'>\n"
        "      <source><address uuid='{}'/></source>\n"
        "    </hostdev>\n",
        xml_escape(m->uuid));
  }
  if (const auto* p = std::get_if<PciHostdev>(&gpu)) {
    // "dddd:bb:ss.f" was validated; split into libvirt's attributes
    const std::string& a = p->address;
    return fmt::format(
        "    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
        "      <source><address domain='0x{}' bus='0x{}' slot='0x{}' function='0x{}'/></source>\n"
        "    </hostdev>\n",
        xml_escape(a.substr(0, 4)), xml_escape(a.substr(5, 2)), xml_escape(a.substr(8, 2)),
        xml_escape(a.substr(11, 1)));
  }
  return {};
}

}  // namespace

std::string render_graphics_xml(DisplayKind display, std::string_view listen_address, std::string_view password,
                                int port, std::string_view vnc_socket) {
  if (display == DisplayKind::vnc) {
    // A UNIX socket in the domain's private directory (root and QEMU's user only): no other user
    // on the node can reach the VNC server to try passwords; only websockify, as root, connects.
    // Empty: libvirt picks the path at start. A live update must name the path it picked.
    const std::string socket = vnc_socket.empty() ? std::string() : fmt::format(" socket='{}'", xml_escape(vnc_socket));
    return fmt::format("<graphics type='vnc' passwd='{}'><listen type='socket'{}/></graphics>", xml_escape(password),
                       socket);
  }
  const std::string l = xml_escape(listen_address);
  // For a live update libvirt refuses any change of port or autoport, so a running domain's
  // graphics are re-sent with the port it was given and autoport as it was defined.
  const std::string ports =
      port > 0 ? fmt::format("port='{}' autoport='yes'", port) : std::string("port='-1' autoport='yes'");
  return fmt::format(
      "<graphics type='spice' {} listen='{}' passwd='{}'><listen type='address' address='{}'/></graphics>", ports, l,
      xml_escape(password), l);
}

Result<std::string> render_domain_xml(const DomainRequest& r) {
  const std::string ctx = fmt::format("domain XML for job {}", r.job_id);
  if (r.pool == nullptr) return fail(ErrorCode::internal, ctx + ": no pool");
  const VizPoolSpec& pool = *r.pool;
  if (r.geometry.width > pool.max_geometry.width || r.geometry.height > pool.max_geometry.height) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("{}: geometry {}x{} exceeds pool {} maximum {}x{}", ctx, r.geometry.width,
                            r.geometry.height, pool.name, pool.max_geometry.width, pool.max_geometry.height));
  }
  if (!plain_listen_address(r.listen_address)) {
    return fail(ErrorCode::invalid_argument, fmt::format("{}: listen address '{}' is not a numeric IP address", ctx,
                                                         printable_label(r.listen_address)));
  }
  if (r.display_password.empty()) return fail(ErrorCode::invalid_argument, ctx + ": empty display password");
  if (!r.cpuset.empty()) {
    if (auto ok = check_cpuset(r.cpuset); !ok) return std::unexpected(ok.error().within(ctx));
  }

  std::string cputune;
  std::string vcpu_attrs = "placement='static'";
  if (!r.cpuset.empty()) {
    vcpu_attrs += fmt::format(" cpuset='{}'", xml_escape(r.cpuset));
    cputune = "  <cputune>\n";
    for (unsigned i = 0; i < pool.vcpus; ++i) {
      cputune += fmt::format("    <vcpupin vcpu='{}' cpuset='{}'/>\n", i, xml_escape(r.cpuset));
    }
    cputune += fmt::format("    <emulatorpin cpuset='{}'/>\n  </cputune>\n", xml_escape(r.cpuset));
  }
  // The guest learns the requested geometry from its command line; the value is digits and 'x'.
  const std::string cmdline =
      fmt::format("{} vgpu_viz.geometry={}x{}", r.image.cmdline, r.geometry.width, r.geometry.height);
  std::string disk;
  if (!r.image.disk.empty()) {
    disk = fmt::format(
        "    <disk type='file' device='disk'>\n"
        "      <driver name='qemu' type='qcow2'/>\n"
        "      <source file='{}'/>\n"
        "      <target dev='vda' bus='virtio'/>\n"
        "      <transient/>\n"
        "    </disk>\n",
        xml_escape(r.image.disk));
  }
  return fmt::format(
      "<domain type='{domain_type}'>\n"
      "  <name>{name}</name>\n"
      "  <metadata>\n"
      "    <viz:session xmlns:viz='{ns}'>\n"
      "      <viz:job>{job}</viz:job>\n"
      "      <viz:user>{user}</viz:user>\n"
      "      <viz:job_name>{job_name}</viz:job_name>\n"
      "      <viz:pool>{pool}</viz:pool>\n"
      "    </viz:session>\n"
      "  </metadata>\n"
      "  <memory unit='MiB'>{mem}</memory>\n"
      "  <vcpu {vcpu_attrs}>{vcpus}</vcpu>\n"
      "{cputune}"
      "  <os>\n"
      "    <type arch='x86_64' machine='pc'>hvm</type>\n"
      "    <kernel>{kernel}</kernel>\n"
      "    <initrd>{initrd}</initrd>\n"
      "    <cmdline>{cmdline}</cmdline>\n"
      "  </os>\n"
      "  <features><acpi/></features>\n"
      "  <on_poweroff>destroy</on_poweroff>\n"
      "  <on_reboot>destroy</on_reboot>\n"
      "  <on_crash>destroy</on_crash>\n"
      "  <devices>\n"
      "    <emulator>{emulator}</emulator>\n"
      "{disk}"
      "    <serial type='file'>\n"
      "      <source path='{serial}'/>\n"
      "      <target port='0'/>\n"
      "    </serial>\n"
      "    {graphics}\n"
      "    <video>\n"
      "      <model type='vga' vram='{vram}' heads='1' primary='yes'/>\n"
      "    </video>\n"
      "{hostdev}"
      "    <memballoon model='none'/>\n"
      "  </devices>\n"
      "</domain>\n",
      fmt::arg("name", domain_name(r.job_id)), fmt::arg("ns", kMetadataNs), fmt::arg("job", r.job_id),
      fmt::arg("user", xml_escape(printable_label(r.user))),
      fmt::arg("job_name", xml_escape(printable_label(r.job_name))), fmt::arg("pool", xml_escape(pool.name)),
      fmt::arg("mem", pool.memory_mib), fmt::arg("vcpu_attrs", vcpu_attrs), fmt::arg("vcpus", pool.vcpus),
      fmt::arg("cputune", cputune), fmt::arg("kernel", xml_escape(r.image.kernel)),
      fmt::arg("initrd", xml_escape(r.image.initrd)), fmt::arg("cmdline", xml_escape(printable_label(cmdline))),
      fmt::arg("emulator", xml_escape(r.emulator)), fmt::arg("disk", disk),
      fmt::arg("serial", xml_escape(r.serial_log)),
      fmt::arg("graphics", render_graphics_xml(pool.display, r.listen_address, r.display_password, -1)),
      fmt::arg("vram", vram_kib(r.geometry)), fmt::arg("hostdev", hostdev_xml(r.gpu)),
      fmt::arg("domain_type", domain_type(r.accelerator)));
}

}  // namespace vgpu::viz
