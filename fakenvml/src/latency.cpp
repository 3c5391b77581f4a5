#include "latency.h"

#include <charconv>

namespace fakenvml {

std::optional<Latency> parse_latency(std::string_view text, std::string& error) {
  Latency out;
  if (text.empty()) return out;
  // NVIDIA publishes no creation time; DCGM issue #230 reports 1-2 s on an H100 before a new
  // instance shows up, so creation totals 1.5 s. Destruction has no public figure at all: taken
  // as a third of that. Assumptions, stated in docs/backends.md.
  if (text == "h100") return Latency{1200, 300, 100, 400};
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = text.find(',', at);
    const std::string_view item =
        text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    const auto eq = item.find('=');
    unsigned ms = 0;
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    unsigned* field = key == "gi_create"    ? &out.gi_create_ms
                      : key == "ci_create"  ? &out.ci_create_ms
                      : key == "ci_destroy" ? &out.ci_destroy_ms
                      : key == "gi_destroy" ? &out.gi_destroy_ms
                                            : nullptr;
    if (!field || eq == std::string_view::npos || value.empty() || ec != std::errc{} ||
        end != value.data() + value.size() || ms > 60000) {
      error = "VGPU_FAKE_NVML_LATENCY_MS: '" + std::string(item) +
              "': expected h100 or <step>=<ms> items (steps gi_create, ci_create, ci_destroy, gi_destroy; ms <= 60000)";
      return std::nullopt;
    }
    *field = ms;
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace fakenvml
