#include "report.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

namespace vgpu::scrub {
namespace {

// JSON has no NaN/inf; a zero-duration or empty measurement becomes null rather than a lie.
nlohmann::ordered_json number(double v, double scale = 1e3) {
  if (!std::isfinite(v)) return nullptr;
  return std::round(v * scale) / scale;
}

// Seconds keep microseconds: a full H100 scrub takes only ~30 ms.
nlohmann::ordered_json seconds(double v) { return number(v, 1e6); }

nlohmann::ordered_json to_json(const Bandwidth& b) {
  return {{"best_gbps", number(b.best_gbps)}, {"median_gbps", number(b.median_gbps)}, {"reps", b.reps}};
}

double percent(double num, double den) { return den > 0 ? 100.0 * num / den : std::nan(""); }

}  // namespace

std::string_view status_name(Exit e) {
  switch (e) {
    case Exit::ok: return "ok";
    case Exit::usage: return "usage";
    case Exit::no_device: return "no_device";
    case Exit::verify_failed: return "verify_failed";
    case Exit::cuda_error: return "cuda_error";
  }
  return "unknown";
}

double gbps(std::size_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : std::nan("");
}

Bandwidth summarize(std::span<const double> samples) {
  Bandwidth b;
  b.reps = samples.size();
  if (samples.empty()) {
    b.best_gbps = b.median_gbps = std::nan("");
    return b;
  }
  std::vector<double> v(samples.begin(), samples.end());
  std::ranges::sort(v);
  b.best_gbps = v.back();
  const std::size_t mid = v.size() / 2;
  b.median_gbps = v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
  return b;
}

std::string to_json_line(const ScrubReport& r) {
  nlohmann::ordered_json j;
  j["vgpu_scrub"] = kReportVersion;
  j["status"] = status_name(r.exit);
  j["ok"] = r.exit == Exit::ok;
  if (!r.error.empty()) j["error"] = r.error;
  j["device"] = r.device;
  j["uuid"] = r.uuid;
  j["cuda_visible_devices"] = r.visible_devices;
  j["total_bytes"] = r.total_bytes;
  j["scrubbed_bytes"] = r.scrubbed_bytes;
  j["fraction"] = r.total_bytes > 0 ? number(static_cast<double>(r.scrubbed_bytes) / static_cast<double>(r.total_bytes))
                                    : nlohmann::ordered_json(nullptr);
  j["chunks"] = r.chunks;
  j["alloc_failures"] = r.alloc_failures;
  j["method"] = r.method;
  j["calibration_gbps"] = {{"kernel", number(r.calib_kernel_gbps)}, {"memset", number(r.calib_memset_gbps)}};
  j["seconds"] = seconds(r.zero_seconds);
  j["gbps"] = number(gbps(r.scrubbed_bytes, r.zero_seconds));
  j["wall_seconds"] = seconds(r.wall_seconds);
  j["verified_samples"] = r.verified_samples;
  j["nonzero_samples"] = r.nonzero_samples;
  j["seed"] = r.seed;
  if (r.bench) {
    const BenchResult& b = *r.bench;
    const double scrub = gbps(r.scrubbed_bytes, r.zero_seconds);
    j["bench"] = {
        {"buffer_bytes", b.buffer_bytes},
        {"memset", to_json(b.memset)},
        {"kernel", to_json(b.kernel)},
        {"copy", to_json(b.copy)},
        {"copy_counts", "read+write"},
        {"scrub_vs_memset_pct", number(percent(scrub, b.memset.median_gbps))},
        {"scrub_vs_copy_pct", number(percent(scrub, b.copy.median_gbps))},
        {"kernel_vs_memset_pct", number(percent(b.kernel.median_gbps, b.memset.median_gbps))},
    };
  }
  return j.dump();
}

}  // namespace vgpu::scrub
