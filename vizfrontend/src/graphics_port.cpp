#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <fmt/format.h>

#include "hypervisor.h"

namespace vgpu::viz {
namespace {

// The first <graphics> element of a domain XML, up to `end` ('>' for its own attributes,
// "</graphics>" for its children too).
std::optional<std::string_view> graphics_element(std::string_view xml, std::string_view end) {
  const auto tag = xml.find("<graphics");
  if (tag == std::string_view::npos) return std::nullopt;
  const auto stop = xml.find(end, tag);
  return xml.substr(tag, stop == std::string_view::npos ? std::string_view::npos : stop - tag);
}

// The quoted value after `prefix` (written in libvirt's single quotes, ending in the attribute's
// "='"), or after the same text in double quotes: not_found when absent, corrupt when the quote
// never closes.
Result<std::string_view> quoted_value(std::string_view elem, std::string_view prefix) {
  std::string double_quoted(prefix);
  std::ranges::replace(double_quoted, '\'', '"');
  for (const std::string_view key : {prefix, std::string_view(double_quoted)}) {
    const auto at = elem.find(key);
    if (at == std::string_view::npos) continue;
    const auto start = at + key.size();
    const auto close = elem.find(key.back(), start);
    if (close == std::string_view::npos)
      return fail(ErrorCode::corrupt, "domain XML: <graphics>: unterminated attribute");
    return elem.substr(start, close - start);
  }
  return fail(ErrorCode::not_found, "not there");
}

}  // namespace

Result<int> graphics_port_of(std::string_view xml) {
  auto elem = graphics_element(xml, ">");
  if (!elem) return fail(ErrorCode::not_found, "domain XML has no <graphics> device");
  auto value = quoted_value(*elem, " port='");
  if (!value && value.error().code == ErrorCode::not_found)
    return fail(ErrorCode::corrupt, "domain XML: <graphics> has no port attribute");
  if (!value) return std::unexpected(value.error());
  int port = 0;
  const auto [ptr, ec] = std::from_chars(value->data(), value->data() + value->size(), port);
  if (ec != std::errc{} || ptr != value->data() + value->size() || port < -1 || port > 65535)
    return fail(ErrorCode::corrupt, fmt::format("domain XML: <graphics> port '{}' is not a port", *value));
  return port;
}

Result<std::string> graphics_socket_of(std::string_view xml) {
  auto elem = graphics_element(xml, "</graphics>");
  if (!elem) return fail(ErrorCode::not_found, "domain XML has no <graphics> device");
  auto path = quoted_value(*elem, "<listen type='socket' socket='");
  if (!path && path.error().code == ErrorCode::not_found)
    return fail(ErrorCode::not_found, "domain XML: <graphics> has no listen socket");
  if (!path) return std::unexpected(path.error());
  // libvirt's own path: absolute, nothing XML would have escaped, and short enough for sun_path.
  if (!path->starts_with('/') || path->find_first_of("&<>'\"") != std::string_view::npos || path->size() > 107)
    return fail(ErrorCode::corrupt,
                fmt::format("domain XML: <graphics> socket '{}' is not a plain absolute path", *path));
  return std::string(*path);
}

}  // namespace vgpu::viz
