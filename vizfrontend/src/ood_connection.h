// The connection file Open OnDemand's batch_connect reads (connection.yml in the session's
// directory): the keys its VNC template writes, in its order and its "key: value" line format
// (ood_core lib/ood_core/batch_connect/template.rb create_yml; templates/vnc.rb adds display,
// websocket and spassword). OnDemand's noVNC view connects to rnode/<host>/<websocket>/websockify
// with `password`; `port` is what its scripts wait on, so it is the websocket port here too (the
// session's VNC server has no TCP port). QEMU's VNC has one password, so no view-only one:
// spassword is empty.
#pragma once

#include <cstdint>
#include <string>

#include "vgpu/base/error.h"

namespace vgpu::viz {

struct OodConnection {
  std::string host;
  std::uint16_t websocket = 0;
  std::string password;
};

// The file's text; fails, naming the field, on a value that would break its one-line YAML.
Result<std::string> ood_connection_yaml(const OodConnection& c);

}  // namespace vgpu::viz
