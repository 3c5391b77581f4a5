#include "vgpu/node/mps_text.h"

#include <fmt/format.h>

#include <charconv>

#include "vgpu/base/text_split.h"

namespace vgpu {
namespace {

bool is_hex_or_dash(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
}

}  // namespace

bool is_mps_device_name(std::string_view name) {
  std::string_view rest;
  if (name.starts_with("MIG-") || name.starts_with("GPU-")) rest = name.substr(4);
  else
    return false;
  if (rest.empty() || rest.size() > 64 || rest.front() == '-') return false;
  for (char c : rest)
    if (!is_hex_or_dash(c)) return false;
  return true;
}

Result<MpsDirectories> mps_directories(std::string_view root, std::string_view device_uuid) {
  if (!is_mps_device_name(device_uuid))
    return fail(ErrorCode::invalid_argument,
                fmt::format("device \"{}\": not a MIG-<uuid> or GPU-<uuid> device name", device_uuid));
  if (root.empty() || root.front() != '/')
    return fail(ErrorCode::invalid_argument, fmt::format("MPS root \"{}\": must be an absolute path", root));
  std::string instance = fmt::format("{}/{}", root, device_uuid);
  return MpsDirectories{instance, instance + "/pipe", instance + "/log"};
}

std::vector<std::string> mps_default_commands(const ShareLimits& limits) {
  return {fmt::format("set_default_device_pinned_mem_limit 0 {}M", limits.memory_mib),
          fmt::format("set_default_active_thread_percentage {}", limits.thread_percentage)};
}

Result<void> check_mps_reply(std::string_view command, std::string_view reply) {
  const std::string_view got = trim_view(reply);
  constexpr std::string_view percentage = "set_default_active_thread_percentage ";
  if (command.starts_with(percentage)) {
    // The daemon echoes the percentage it now uses as a decimal: "25" -> "25.0".
    const std::string_view wanted = command.substr(percentage.size());
    if (got == wanted || got == fmt::format("{}.0", wanted)) return {};
  } else if (command.starts_with("set_default_device_pinned_mem_limit ")) {
    if (got.empty()) return {};
  } else {
    return fail(ErrorCode::internal, fmt::format("MPS command \"{}\": not one the node sends", command));
  }
  return fail(ErrorCode::io, fmt::format("MPS command \"{}\": unexpected reply \"{}\"", command, got));
}

Result<std::vector<int>> parse_mps_server_list(std::string_view reply) {
  std::vector<int> pids;
  for (const auto line : split_view(reply, '\n')) {
    const std::string_view text = trim_view(line);
    if (text.empty()) continue;
    int pid = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (ec != std::errc() || end != text.data() + text.size() || pid <= 0)
      return fail(ErrorCode::io, fmt::format("get_server_list: \"{}\" is not a server PID", text));
    pids.push_back(pid);
  }
  return pids;
}

}  // namespace vgpu
