#include "vgpu/contract/node_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "vgpu/contract/names.h"

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
    return fail(ErrorCode::invalid_argument, "node name '" + name + "' from " + std::string(source) + " is not usable");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return fail(ErrorCode::not_found, path + ": no such file");
    return fail(ErrorCode::io, path + ": " + std::strerror(err));
  }
  std::string text(limit + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return fail(ErrorCode::io, path + ": read failed");
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got > limit) return fail(ErrorCode::corrupt, path + ": larger than " + std::to_string(limit) + " bytes");
  text.resize(got);
  return text;
}

std::optional<JobId> parse_job_id(const char* text) {
  if (text == nullptr || text[0] == '\0') return std::nullopt;
  std::uint64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(*p - '0');
    if (value > UINT32_MAX) return std::nullopt;
  }
  if (value == 0) return std::nullopt;
  return static_cast<JobId>(value);
}

}  // namespace vgpu::contract
