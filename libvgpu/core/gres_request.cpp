#include "vgpu/core/gres_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include <ranges>

#include "vgpu/base/text_split.h"

#include "vgpu/core/catalog.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu {
namespace {

Result<int> parse_count(std::string_view text, std::string_view entry) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 1 || value > 4096)
    return fail(ErrorCode::invalid_argument,
                fmt::format("gres '{}': count '{}' must be a whole number from 1 to 4096", entry, text));
  return value;
}

// A type is a MIG profile name or a viz pool name; both are restricted to a safe alphabet here
// because the value travels into file names and environment variables on the node.
Result<std::string> parse_type(std::string_view text, std::string_view entry) {
  if (!contract::is_valid_type_name(text))
    return fail(ErrorCode::invalid_argument, fmt::format("gres '{}': type '{}' is not a vgpu type name ({})", entry,
                                                         contract::printable(text), contract::type_name_rule()));
  if (text.front() >= '0' && text.front() <= '9') {
    if (auto p = parse_profile_name(text); !p)
      return fail(ErrorCode::invalid_argument, fmt::format("gres '{}': {}", entry, p.error().message));
  }
  return std::string(text);
}

}  // namespace

Result<std::vector<GresRequest>> parse_vgpu_gres(std::string_view text) {
  std::vector<GresRequest> out;
  if (text.empty()) return fail(ErrorCode::invalid_argument, "gres: empty request");
  for (std::string_view entry : split_view(text, ',')) {
    // Slurm 22.05 prints "gres:vgpu:3g.40gb:1", 23.11 and later "gres/vgpu:3g.40gb:1".
    if (entry.starts_with("gres/")) entry.remove_prefix(5);
    auto fields = split_view(entry, ':');
    if (!fields.empty() && fields.front() == "gres") fields.erase(fields.begin());
    if (fields.empty() || fields.front().empty())
      return fail(ErrorCode::invalid_argument, fmt::format("gres '{}': missing GRES name", entry));
    if (fields.front() != "vgpu") continue;
    if (fields.size() == 1 || (fields.size() == 2 && parse_count(fields[1], entry)))
      return fail(ErrorCode::invalid_argument,
                  fmt::format("gres '{}': vgpu requests must name a profile, e.g. vgpu:3g.40gb:1", entry));
    if (fields.size() > 3)
      return fail(ErrorCode::invalid_argument, fmt::format("gres '{}': expected vgpu:<profile>[:<count>]", entry));
    GresRequest req;
    auto type = parse_type(fields[1], entry);
    if (!type) return std::unexpected(type.error());
    // Refused rather than summed: Slurm keeps one count per type, and VGPU_ALLOC names each once.
    if (std::ranges::any_of(out, [&](const GresRequest& r) { return r.type == *type; }))
      return fail(ErrorCode::invalid_argument,
                  fmt::format("gres '{}': type {} is asked for more than once; ask for it once with the total count",
                              entry, *type));
    req.type = std::move(*type);
    if (fields.size() == 3) {
      auto count = parse_count(fields[2], entry);
      if (!count) return std::unexpected(count.error());
      req.count = *count;
    }
    out.push_back(std::move(req));
  }
  return out;
}

Result<std::vector<GresRequest>> parse_vgpu_alloc(std::string_view text) {
  auto items = contract::parse_alloc(text);  // VGPU_ALLOC's format is the contract's
  if (!items) return std::unexpected(items.error());
  std::vector<GresRequest> out;
  for (auto& item : *items) out.push_back({std::move(item.type), item.count});
  return out;
}

}  // namespace vgpu
