#include "context.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

#include "vgpu/contract/atomic_file.h"

#include "file_util.h"
#include "policy_pools.h"
#include "validate.h"

namespace vgpu::viz::tool {

Result<VizConfig> load_config(const Options& o) {
  auto config = load_viz_config(o.config_path);
  if (!config) return std::unexpected(config.error().within("vgpu-viz"));
  if (!o.policy_path.empty()) {
    auto policy = load_policy_file(o.policy_path);
    if (!policy) return std::unexpected(policy.error().within("vgpu-viz"));
    if (auto ok = add_policy_pools(*config, *policy); !ok) return std::unexpected(ok.error().within("vgpu-viz"));
  }
  return config;
}

Result<std::unique_ptr<Context>> open_context(const Options& o) {
  auto c = std::make_unique<Context>();
  auto config = load_config(o);
  if (!config) return std::unexpected(config.error());
  c->config = std::move(*config);
  auto hv = open_libvirt(c->config.libvirt_uri);
  if (!hv) return std::unexpected(hv.error().within("vgpu-viz"));
  c->hv = std::move(*hv);
  c->sysfs = std::make_unique<RootedSysfs>(c->config.sysfs_root);
  c->proxy = std::make_unique<WebsockifyProxy>(c->config, c->config.state_dir + "/tokens");
  if (!c->config.ood_listen_address.empty()) c->ood = std::make_unique<WebsockifySessionProxy>(c->config);
  c->sessions =
      std::make_unique<SessionManager>(c->config, *c->hv, *c->sysfs, *c->proxy, system_random(), c->ood.get());
  c->sessions->set_cpu_locator(make_cpu_locator(c->config.topology));
  return c;
}

Result<Owner> resolve_owner(const std::string& user) {
  auto name = check_name("user", user);
  if (!name) return std::unexpected(name.error().within("vgpu-viz: --owner"));
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (getpwnam_r(user.c_str(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    return Owner{found->pw_uid, found->pw_gid};
  uid_t uid = 0;
  auto [p, ec] = std::from_chars(user.data(), user.data() + user.size(), uid);
  if (ec == std::errc() && p == user.data() + user.size() && getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 &&
      found != nullptr)
    return Owner{found->pw_uid, found->pw_gid};
  return fail(ErrorCode::invalid_argument, fmt::format("vgpu-viz: --owner: no such user '{}'", user));
}

std::string access_path(const VizConfig& config, std::uint32_t job) {
  return fmt::format("{}/{}", config.access_dir, job);
}

Result<void> write_access_file(const std::string& path, const std::string& text, std::optional<Owner> owner) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
  auto options = contract::ReplaceOptions::durable_file(0600);
  // Owner and mode before the secret goes in, so it is never readable by anyone else.
  if (owner) options.owner = std::make_pair(owner->uid, owner->gid);
  return contract::atomic_replace(contract_fs(), dir, path.substr(slash + 1), text, options);
}

Result<void> write_ood_connection(const std::string& path, std::string_view access) {
  auto connection = ood_connection_of(access);
  if (!connection) {
    return fail(ErrorCode::unavailable,
                fmt::format("vgpu-viz: --ood-connection {}: this node gives sessions no OnDemand websocket (its "
                            "viz.json has no ood_listen_address)",
                            path));
  }
  auto yaml = ood_connection_yaml(*connection);
  if (!yaml) return std::unexpected(yaml.error().within(fmt::format("vgpu-viz: --ood-connection {}", path)));
  if (auto ok = write_access_file(path, *yaml, std::nullopt); !ok) {
    return std::unexpected(ok.error().within(fmt::format("vgpu-viz: --ood-connection {}", path)));
  }
  return {};
}

int report(const Error& e) {
  std::fprintf(stderr, "%s\n", e.message.c_str());
  return e.code == ErrorCode::invalid_argument ? 2 : 1;
}

}  // namespace vgpu::viz::tool
