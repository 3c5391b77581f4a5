#include "cluster_view_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>

#include "view_transport.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/cluster_view_snapshot.h"

namespace vgpu::agent {
namespace {

// A planner round must not wait long on the publisher: the node's hooks wait behind it.
constexpr std::chrono::milliseconds kFetchTimeout{3000};
// One read serves every question of a round.
constexpr std::chrono::seconds kReuseFor{1};

Result<ViewSourceSpec> tcp_spec(std::string_view where, std::string_view value) {
  ViewSourceSpec spec;
  spec.kind = ViewSourceSpec::Kind::tcp;
  const auto colon = where.rfind(':');
  spec.host = std::string(where.substr(0, colon));
  if (colon != std::string_view::npos) {
    const auto digits = where.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), spec.port);
    if (ec != std::errc{} || end != digits.data() + digits.size() || spec.port < 1 || spec.port > 65535)
      return fail(ErrorCode::invalid_argument,
                  fmt::format("VGPU_CLUSTER_VIEW={}: port \"{}\" is not a number from 1 to 65535", value, digits));
  }
  if (spec.host.empty() || spec.host.find_first_of(" /") != std::string::npos)
    return fail(ErrorCode::invalid_argument,
                fmt::format("VGPU_CLUSTER_VIEW={}: \"{}\" is not a host name", value, spec.host));
  return spec;
}

}  // namespace

std::string ViewSourceSpec::name() const {
  switch (kind) {
    case Kind::slurmctld: return "slurmctld";
    case Kind::file: return path;
    case Kind::tcp: return fmt::format("tcp:{}:{}", host, port);
  }
  return "?";
}

ViewEnvironment view_environment(const char* view, const char* key) {
  const bool defaulted = !view || !*view;
  return {.value = defaulted ? "service" : view,
          .public_key = key && *key ? key : std::string(contract::kDefaultClusterViewKeyPath),
          .defaulted = defaulted};
}

Result<ViewSourceSpec> parse_view_source(std::string_view value, std::string_view public_key, std::string_view node) {
  ViewSourceSpec spec;
  if (value == "slurmctld") {  // "" is not a setting here: view_environment owns the default
    spec.kind = ViewSourceSpec::Kind::slurmctld;
  } else if (value.starts_with("tcp:")) {
    auto tcp = tcp_spec(value.substr(4), value);
    if (!tcp) return tcp;
    spec = std::move(*tcp);
  } else if (value.starts_with("/")) {
    spec.kind = ViewSourceSpec::Kind::file;
    spec.path = std::string(value);
  } else {
    return fail(ErrorCode::invalid_argument, fmt::format("VGPU_CLUSTER_VIEW={}: not \"service\", \"slurmctld\", "
                                                         "\"tcp:<host>[:<port>]\" or an absolute path",
                                                         value));
  }
  spec.public_key = std::string(public_key);
  spec.node = std::string(node);
  if (spec.kind == ViewSourceSpec::Kind::tcp && spec.public_key.empty())
    return fail(ErrorCode::invalid_argument,
                fmt::format("VGPU_CLUSTER_VIEW={}: a view over the network needs "
                            "VGPU_CLUSTER_VIEW_KEY (the publisher's public key) to be trusted",
                            value));
  return spec;
}

Result<std::string> fetch_view_text(const ViewSourceSpec& spec) {
  if (spec.kind == ViewSourceSpec::Kind::tcp)
    return fetch_view(spec.host, spec.port, spec.node, contract::kClusterViewMaxBytes, kFetchTimeout);
  const auto trust = spec.public_key.empty() ? contract::ViewTrust::owner : contract::ViewTrust::signature;
  return contract::read_cluster_view_file(posix_file_system(), spec.path, ::geteuid(), trust);
}

Result<ClusterViewSource> ClusterViewSource::open(ViewSourceSpec spec, Fetch fetch) {
  std::optional<ViewVerifier> verifier;
  if (!spec.public_key.empty()) {
    auto key = ViewVerifier::from_public_key_file(spec.public_key);
    if (!key) return std::unexpected(key.error().within("VGPU_CLUSTER_VIEW_KEY"));
    verifier = std::move(*key);
  }
  return ClusterViewSource(std::move(spec), std::move(verifier), std::move(fetch));
}

Result<contract::ClusterView> ClusterViewSource::read_view() {
  const std::string where = "cluster view " + spec_.name();
  auto text = fetch_(spec_);
  if (!text) return std::unexpected(text.error().within(where));
  auto split = contract::split_view_signature(*text, where);
  if (!split) return std::unexpected(split.error());
  if (verifier_) {
    if (!split->signature)
      return fail(ErrorCode::unavailable, where + ": not signed, and VGPU_CLUSTER_VIEW_KEY asks for a signature");
    if (!verifier_->verify(split->body, *split->signature))
      return fail(ErrorCode::unavailable,
                  fmt::format("{}: signature does not verify with {}: not the publisher's, or altered", where,
                              spec_.public_key));
  }
  auto view = contract::parse_cluster_view(split->body, where);
  // A node's view holds nothing of the others: taken for another node it would read as a node
  // without jobs or demand.
  if (view && view->for_node != contract::kWholeCluster && view->for_node != spec_.node)
    return fail(ErrorCode::unavailable, fmt::format("{}: the view of node {}, not of {}", where, view->for_node,
                                                    spec_.node.empty() ? "the whole cluster" : spec_.node));
  // A whole view (a file, a publisher of the release before) is cut here as the publisher would
  // have: the same jobs to prepare for, whichever way the view came.
  if (view && view->for_node == contract::kWholeCluster && !spec_.node.empty())
    return ClusterViewCuts(std::move(*view)).cut(spec_.node);
  return view;
}

Result<const contract::ClusterView*> ClusterViewSource::fresh_view(std::int64_t now,
                                                                   std::chrono::steady_clock::time_point tick) {
  if (!read_at_ || tick - *read_at_ >= kReuseFor) {
    read_at_ = tick;
    auto view = read_view();
    // A view older than the one held (a restarted publisher's first, a file put back) changes nothing.
    if (view && (!last_ || view->taken_at >= last_->taken_at)) last_ = std::move(*view);
    problem_ = view ? "" : view.error().message;
  }
  if (!last_) return fail(ErrorCode::unavailable, problem_);
  const auto age = now - last_->taken_at;
  if (age > last_->stale_after_s())
    return fail(ErrorCode::unavailable,
                fmt::format("cluster view {}: stale: taken {} s ago, {} s at most{}", spec_.name(), age,
                            last_->stale_after_s(), problem_.empty() ? "" : " (" + problem_ + ")"));
  return &*last_;
}

ClusterViewStatus ClusterViewSource::status(std::int64_t now) const {
  ClusterViewStatus s;
  s.source = spec_.name();
  if (last_) s.age_s = std::max<std::int64_t>(0, now - last_->taken_at);
  s.usable = last_ && now - last_->taken_at <= last_->stale_after_s();
  if (!s.usable) s.problem = last_ ? fmt::format("stale ({} s old)", now - last_->taken_at) : problem_;
  return s;
}

bool DirectQueryBudget::take(std::chrono::steady_clock::time_point tick) {
  if (last_ && tick - *last_ < kRefill) return false;
  last_ = tick;
  ++taken_;
  return true;
}

}  // namespace vgpu::agent
