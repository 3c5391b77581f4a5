#include "vgpu/contract/node_files.h"

#include <vector>

#include "vgpu/contract/guarded_read.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {
namespace {

std::optional<std::string> slurmd_node_argument(std::string_view cmdline) {
  std::vector<std::string_view> args;
  while (!cmdline.empty()) {
    std::size_t end = cmdline.find('\0');
    args.push_back(cmdline.substr(0, end));
    if (end == std::string_view::npos) break;
    cmdline.remove_prefix(end + 1);
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-N" && i + 1 < args.size()) return std::string(args[i + 1]);
    if (args[i].size() > 2 && args[i].substr(0, 2) == "-N") return std::string(args[i].substr(2));
  }
  return std::nullopt;
}

Result<std::string> checked(std::string name, std::string_view source) {
  if (!is_valid_node_name(name)) {
    return fail(ErrorCode::invalid_argument, "node name '" + printable(name) + "' from " + std::string(source) +
                                                 ": not usable as a node's state directory (" +
                                                 std::string(node_name_rule()) + ")");
  }
  return name;
}

}  // namespace

std::string resolve_state_dir(const char* env_value) {
  if (env_value != nullptr && env_value[0] == '/') return env_value;
  return std::string(kDefaultStateDir);
}

std::string resolve_policy_path(const char* env_value) {
  return env_value != nullptr && env_value[0] != '\0' ? std::string(env_value) : std::string(kDefaultPolicyPath);
}

std::string resolve_viz_config_path(const char* env_value) {
  return env_value != nullptr && env_value[0] != '\0' ? std::string(env_value) : std::string(kDefaultVizConfigPath);
}

Result<std::string> resolve_node_name(const NodeNameSources& sources) {
  if (sources.vgpu_nodename != nullptr && sources.vgpu_nodename[0] != '\0') {
    return checked(sources.vgpu_nodename, "VGPU_NODENAME");
  }
  if (sources.slurmd_nodename != nullptr && sources.slurmd_nodename[0] != '\0') {
    return checked(sources.slurmd_nodename, "SLURMD_NODENAME");
  }
  if (auto arg = slurmd_node_argument(sources.cmdline)) return checked(*arg, "slurmd -N");
  std::string_view host = sources.hostname.substr(0, sources.hostname.find('.'));
  if (host.empty()) return fail(ErrorCode::not_found, "cannot tell this node's name");
  return checked(std::string(host), "the host name");
}

std::string advertisement_path(std::string_view state_dir, std::string_view node) {
  return std::string(state_dir) + "/" + std::string(node) + "/advertisement.json";
}

std::string job_record_path(std::string_view state_dir, std::string_view node, JobId job_id) {
  return std::string(state_dir) + "/" + std::string(node) + "/jobs/" + std::to_string(job_id) + ".json";
}

Result<std::string> read_small_file(const std::string& path, std::size_t limit) {
  // Read as every file that steers a node is (guarded_read.h): no symlink, nothing that blocks.
  auto file = open_guarded(posix_file_system(), path, "");
  if (!file) return std::unexpected(file.error());
  auto info = file->fstat();
  if (!info) return std::unexpected(info.error());
  if (info->is_regular && info->size > limit)
    return fail(ErrorCode::corrupt, path + ": larger than " + std::to_string(limit) + " bytes");
  if (auto why = guarded_refusal(*info, {.what = "", .max_bytes = limit, .owners = {}}); !why.empty())
    return fail(ErrorCode::unavailable, path + ": refused: " + why);
  auto text = file->read_all(limit);  // a file that grew since the fstat stops at the limit
  if (!text && text.error().code == ErrorCode::corrupt)
    return fail(ErrorCode::corrupt, path + ": larger than " + std::to_string(limit) + " bytes");
  return text;
}

std::optional<JobId> parse_job_id(std::string_view text) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value == 0 || value > UINT32_MAX) return std::nullopt;
  return static_cast<JobId>(value);
}

std::optional<JobId> parse_job_id(const char* text) {
  if (text == nullptr) return std::nullopt;
  return parse_job_id(std::string_view(text));
}

}  // namespace vgpu::contract
