// The node's viz configuration (vizfrontend/src/viz_config.h): admin-written JSON whose values
// end up in libvirt XML, websockify's command line and file paths. Properties: an accepted
// config holds only names, paths, host strings and port ranges of the documented shapes, and
// each of its pools renders a domain XML at its largest geometry in which markup stays balanced.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "domain_xml.h"
#include "fuzz_check.h"
#include "validate.h"
#include "viz_config.h"

namespace {

bool plain_absolute(const std::string& path) {
  return !path.empty() && path.front() == '/' && path.find('\n') == std::string::npos &&
         path.find("/../") == std::string::npos && !path.ends_with("/..");
}

bool host_string(const std::string& s) {
  return vgpu::viz::printable_label(s) == s && s.find_first_of(" '\"<>&") == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace viz = vgpu::viz;

  auto config = viz::parse_viz_config(text, "fuzz.json");
  if (!config) {
    FUZZ_CHECK(config.error().message.starts_with("fuzz.json"));
    return 0;
  }
  const viz::VizConfig& c = *config;
  for (const std::string* s :
       {&c.libvirt_uri, &c.listen_address, &c.public_host, &c.ssh_host, &c.ood_listen_address, &c.ood_host})
    FUZZ_CHECK(host_string(*s));
  // The OnDemand websockets' port range: on websockify's command line, never privileged, never empty.
  FUZZ_CHECK(c.ood_port_min >= 1024 && c.ood_port_min <= c.ood_port_max);
  for (const std::string* p : {&c.state_dir, &c.access_dir, &c.sysfs_root, &c.novnc_dir, &c.websockify, &c.emulator})
    FUZZ_CHECK(plain_absolute(*p));
  FUZZ_CHECK(c.proxy_port >= 1);
  for (const auto& [name, image] : c.images) {
    FUZZ_CHECK(viz::check_name("image", name).has_value());
    FUZZ_CHECK(plain_absolute(image.kernel) && plain_absolute(image.initrd));
    FUZZ_CHECK(image.disk.empty() || plain_absolute(image.disk));
  }
  for (const auto& [name, pool] : c.pools) {
    FUZZ_CHECK(name == pool.name);
    FUZZ_CHECK(viz::check_name("pool", name).has_value());
    FUZZ_CHECK(pool.gpu_type.find('/') == std::string::npos);
    FUZZ_CHECK(pool.memory_mib >= 1 && pool.vcpus >= 1);
    const auto& g = pool.max_geometry;
    FUZZ_CHECK(g.width >= 64 && g.width <= 16384 && g.height >= 64 && g.height <= 16384);
    FUZZ_CHECK(plain_absolute(pool.image.kernel) && plain_absolute(pool.image.initrd));

    viz::DomainRequest request;
    request.job_id = 4242;
    request.user = "<user name=\"x\" & 'y'>";
    request.job_name = std::string(text.substr(0, 200));
    request.pool = &pool;
    request.image = pool.image;
    request.geometry = pool.max_geometry;
    request.listen_address = c.listen_address;
    request.emulator = c.emulator;
    request.serial_log = c.state_dir + "/serial.log";
    request.display_password = "pw";
    auto xml = viz::render_domain_xml(request);
    if (xml) {
      FUZZ_CHECK(std::count(xml->begin(), xml->end(), '<') == std::count(xml->begin(), xml->end(), '>'));
      FUZZ_CHECK(xml->find("<user name") == std::string::npos);
    }
  }
  return 0;
}
