#include "layout_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "vgpu/core/gres_request.h"

namespace vgpuctl {

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    std::size_t pos = text.find(',', start);
    out.emplace_back(text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

namespace {
bool to_int(std::string_view s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

vgpu::Result<std::vector<RunningSpec>> parse_running(std::string_view text) {
  std::vector<RunningSpec> out;
  for (const auto& item : split_list(text)) {
    auto bad = [&] {
      return vgpu::fail(vgpu::ErrorCode::invalid_argument,
                        fmt::format("--running '{}': expected GPU:PROFILE@START[/OWNER]", item));
    };
    auto colon = item.find(':');
    auto at = item.find('@');
    if (colon == std::string::npos || at == std::string::npos || at < colon) return bad();
    RunningSpec r;
    auto slash = item.find('/', at);
    std::string_view view(item);
    if (!to_int(view.substr(0, colon), r.gpu) || r.gpu < 0) return bad();
    r.profile = item.substr(colon + 1, at - colon - 1);
    if (!to_int(view.substr(at + 1, slash == std::string::npos ? std::string::npos : slash - at - 1), r.start))
      return bad();
    if (slash != std::string::npos) r.owner = item.substr(slash + 1);
    out.push_back(std::move(r));
  }
  return out;
}

vgpu::Result<std::vector<vgpu::Demand>> parse_demand(std::string_view text) {
  std::vector<vgpu::Demand> out;
  auto parsed = vgpu::parse_vgpu_alloc(text);
  if (!parsed) return std::unexpected(parsed.error().within("--demand"));
  for (const auto& r : *parsed) out.push_back({r.type, r.count, false});
  return out;
}

}  // namespace vgpuctl
