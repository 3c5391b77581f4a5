// What the user is told to open. The VNC password travels in the URL fragment (after '#'):
// browsers never send the fragment to the server, so neither websockify's HTTP log nor a proxy
// sees it; our session page (web/vgpu-viz.html) reads it from there.
// The websockify token must reach websockify (it is in the WebSocket path), so it sits in the
// query; alone it grants nothing without the VNC password.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::viz {

struct AccessInfo {
  std::string url;       // open in a browser (after the ssh tunnel is up)
  std::string ssh_line;  // tunnel from the user's machine to the node's proxy
  // Open OnDemand: this session's own websockify (VizConfig::ood_listen_address); port 0 = none.
  std::string ood_host;
  std::uint16_t ood_port = 0;
};

AccessInfo make_access_info(std::string_view public_host, std::uint16_t proxy_port, std::string_view ssh_host,
                            std::string_view listen_address, std::string_view token, std::string_view password);

// Percent-encodes everything except RFC 3986 unreserved characters.
std::string url_encode(std::string_view text);

}  // namespace vgpu::viz
