#include "ood_connection.h"

#include <fmt/format.h>

#include "validate.h"

namespace vgpu::viz {
namespace {

// Host names and our passwords are letters, digits, '.', '-' and '_': nothing YAML would read as
// anything but a plain string, and no line breaks.
bool plain(const std::string& v) {
  if (v.empty() || v.size() > 253) return false;
  for (const char c : v) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<std::string> ood_connection_yaml(const OodConnection& c) {
  if (!plain(c.host)) {
    return fail(ErrorCode::invalid_argument,
                fmt::format("OnDemand connection: host '{}': expected a host name", printable_label(c.host)));
  }
  if (!plain(c.password)) {
    return fail(ErrorCode::invalid_argument, "OnDemand connection: password: expected letters and digits");
  }
  if (c.websocket == 0) return fail(ErrorCode::invalid_argument, "OnDemand connection: websocket: no port");
  return fmt::format("host: {}\nport: {}\npassword: {}\ndisplay: 0\nwebsocket: {}\nspassword: \n", c.host, c.websocket,
                     c.password, c.websocket);
}

}  // namespace vgpu::viz
