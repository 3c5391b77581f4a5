#include "access_text.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace vgpu::viz {

std::string access_text(const StartedSession& s, bool rotated) {
  std::string text = fmt::format(
      "vgpu-viz: job {}: {} (domain {}, pool {})\n"
      "  1. on your machine:  {}\n"
      "  2. open:             {}\n"
      "  password:            {}\n",
      s.record.job_id, rotated ? "display password changed" : "session is up", s.record.domain, s.record.pool,
      s.access.ssh_line, s.access.url, s.password);
  if (s.access.ood_port != 0) {
    text += fmt::format("  OnDemand websocket:  {}:{}\n", s.access.ood_host, s.access.ood_port);
  }
  return text;
}

namespace {
std::optional<std::string> line_value(std::string_view text, std::string_view label) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    if (line.starts_with(label)) {
      line.remove_prefix(label.size());
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      return std::string(line);
    }
    at = end + 1;
  }
  return std::nullopt;
}
}  // namespace

std::optional<OodConnection> ood_connection_of(std::string_view access) {
  auto password = line_value(access, "  password:");
  auto websocket = line_value(access, "  OnDemand websocket:");
  if (!password || !websocket) return std::nullopt;
  const auto colon = websocket->rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  OodConnection c{websocket->substr(0, colon), 0, *password};
  const char* first = websocket->data() + colon + 1;
  const char* last = websocket->data() + websocket->size();
  auto [p, ec] = std::from_chars(first, last, c.websocket);
  if (ec != std::errc() || p != last || c.websocket == 0) return std::nullopt;
  return c;
}

}  // namespace vgpu::viz
