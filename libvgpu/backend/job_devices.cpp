#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "vgpu/backend/backend_devices.h"

namespace vgpu {
namespace {

// Reads "<digits>" from the front of `s`, advancing it.
std::optional<int> take_number(std::string_view& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return v;
}

bool take(std::string_view& s, std::string_view word) {
  if (!s.starts_with(word)) return false;
  s.remove_prefix(word.size());
  return true;
}

}  // namespace

Result<MigMinors> MigMinors::parse(std::string_view text, std::string_view source) {
  MigMinors out;
  int line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    auto bad = [&](std::string_view why) {
      return fail(ErrorCode::corrupt, fmt::format("{}:{}: '{}': {}", source, line_no, line, why));
    };
    auto space = line.find(' ');
    if (space == std::string_view::npos) return bad("expected '<name> <minor>'");
    std::string_view name = line.substr(0, space);
    std::string_view rest = line.substr(space + 1);
    auto minor = take_number(rest);
    if (!minor || !rest.empty()) return bad("minor is not a number");
    if (name == "config" || name == "monitor") continue;
    std::optional<int> gpu, gi, ci;
    if (!take(name, "gpu") || !(gpu = take_number(name)) || !take(name, "/gi") || !(gi = take_number(name)))
      return bad("expected gpu<N>/gi<N>/access or gpu<N>/gi<N>/ci<N>/access");
    if (take(name, "/ci") && !(ci = take_number(name))) return bad("expected gpu<N>/gi<N>/ci<N>/access");
    if (name != "/access") return bad("expected the entry to end in /access");
    auto key = std::tuple{*gpu, *gi, ci.value_or(-1)};
    if (!out.minors_.emplace(key, *minor).second) return bad("duplicate entry");
  }
  return out;
}

Result<MigMinors> MigMinors::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::unavailable, fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::optional<int> MigMinors::gi_access(int gpu_minor, int gi) const {
  auto it = minors_.find({gpu_minor, gi, -1});
  return it == minors_.end() ? std::nullopt : std::optional(it->second);
}

std::optional<int> MigMinors::ci_access(int gpu_minor, int gi, int ci) const {
  auto it = minors_.find({gpu_minor, gi, ci});
  return it == minors_.end() ? std::nullopt : std::optional(it->second);
}

std::vector<MigMinors::Entry> MigMinors::of_gpu(int gpu_minor) const {
  std::vector<Entry> out;
  for (const auto& [key, minor] : minors_) {
    const auto& [gpu, gi, ci] = key;
    if (gpu == gpu_minor) out.push_back({gi, ci < 0 ? std::nullopt : std::optional(ci), minor});
  }
  return out;
}

Result<JobDevices> job_devices(const GpuInfo& gpu, const InstanceInfo& instance, const MigMinors& minors) {
  auto where = fmt::format("gpu {} ({}) gi {}", gpu.index, gpu.uuid, instance.gi_id);
  if (!instance.ci_id || instance.mig_uuid.empty())
    return fail(ErrorCode::not_found, where + ": has no compute instance, so no MIG device");
  if (gpu.minor < 0) return fail(ErrorCode::not_found, where + ": GPU minor number unknown");
  if (instance.profile_id == kWholeGpuProfileId)
    return JobDevices{instance.mig_uuid,
                      {fmt::format("/dev/nvidia{}", gpu.minor), "/dev/nvidiactl", "/dev/nvidia-uvm"}};
  auto gi_cap = minors.gi_access(gpu.minor, instance.gi_id);
  auto ci_cap = minors.ci_access(gpu.minor, instance.gi_id, *instance.ci_id);
  if (!gi_cap)
    return fail(ErrorCode::not_found,
                fmt::format("{}: no gpu{}/gi{}/access in mig-minors", where, gpu.minor, instance.gi_id));
  if (!ci_cap)
    return fail(ErrorCode::not_found, fmt::format("{}: no gpu{}/gi{}/ci{}/access in mig-minors", where, gpu.minor,
                                                  instance.gi_id, *instance.ci_id));
  return JobDevices{
      instance.mig_uuid,
      {fmt::format("/dev/nvidia{}", gpu.minor), "/dev/nvidiactl", "/dev/nvidia-uvm",
       fmt::format("/dev/nvidia-caps/nvidia-cap{}", *gi_cap), fmt::format("/dev/nvidia-caps/nvidia-cap{}", *ci_cap)}};
}

}  // namespace vgpu
