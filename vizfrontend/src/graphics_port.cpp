#include <charconv>
#include <string>
#include <fmt/format.h>

#include "hypervisor.h"

namespace vgpu::viz {

Result<int> graphics_port_of(std::string_view xml) {
  // libvirt writes <graphics type='vnc' port='5900' .../> with single quotes; accept both styles.
  const auto tag = xml.find("<graphics");
  if (tag == std::string_view::npos) return fail(ErrorCode::not_found, "domain XML has no <graphics> device");
  const auto end = xml.find('>', tag);
  const auto elem = xml.substr(tag, end == std::string_view::npos ? std::string_view::npos : end - tag);
  for (const std::string_view key : {" port='", " port=\""}) {
    const auto at = elem.find(key);
    if (at == std::string_view::npos) continue;
    const auto start = at + key.size();
    const auto close = elem.find(key.back(), start);
    if (close == std::string_view::npos) break;
    const auto value = elem.substr(start, close - start);
    int port = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
    if (ec != std::errc{} || ptr != value.data() + value.size() || port < -1 || port > 65535) {
      return fail(ErrorCode::corrupt, fmt::format("domain XML: <graphics> port '{}' is not a port", value));
    }
    return port;
  }
  return fail(ErrorCode::corrupt, "domain XML: <graphics> has no port attribute");
}

Result<std::string> graphics_socket_of(std::string_view xml) {
  const auto tag = xml.find("<graphics");
  if (tag == std::string_view::npos) return fail(ErrorCode::not_found, "domain XML has no <graphics> device");
  const auto end = xml.find("</graphics>", tag);
  const auto elem = xml.substr(tag, end == std::string_view::npos ? std::string_view::npos : end - tag);
  for (const std::string_view key : {"<listen type='socket' socket='", "<listen type=\"socket\" socket=\""}) {
    const auto at = elem.find(key);
    if (at == std::string_view::npos) continue;
    const auto start = at + key.size();
    const auto close = elem.find(key.back(), start);
    if (close == std::string_view::npos) break;
    const auto path = elem.substr(start, close - start);
    // libvirt's own path: absolute, and nothing XML would have escaped.
    if (!path.starts_with('/') || path.find_first_of("&<>'\"") != std::string_view::npos || path.size() > 107)
      return fail(ErrorCode::corrupt, fmt::format("domain XML: <graphics> socket '{}' is not a plain absolute path", path));
    return std::string(path);
  }
  return fail(ErrorCode::not_found, "domain XML: <graphics> has no listen socket");
}

}  // namespace vgpu::viz
