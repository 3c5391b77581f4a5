#include "novnc_url.h"

#include <fmt/format.h>

#include "web_root.h"

namespace vgpu::viz {

std::string url_encode(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

AccessInfo make_access_info(std::string_view public_host, std::uint16_t proxy_port, std::string_view ssh_host,
                            std::string_view listen_address, std::string_view token, std::string_view password) {
  AccessInfo info;
  const std::string path = url_encode(fmt::format("websockify?token={}", url_encode(token)));
  // The page (web/vgpu-viz.html) reads the password from the fragment as URL parameters.
  info.url = fmt::format("http://{}:{}/{}?path={}#&password={}", public_host, proxy_port, kSessionPageName, path,
                         url_encode(password));
  info.ssh_line = fmt::format("ssh -N -L {}:{}:{} {}", proxy_port, listen_address, proxy_port, ssh_host);
  return info;
}

}  // namespace vgpu::viz
