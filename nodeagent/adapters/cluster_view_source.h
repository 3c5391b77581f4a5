// Where a planner learns slurmctld's view from: the cluster view one publisher on the controller
// makes for every node (contract/cluster_view.h), or slurmctld itself.
//
//   VGPU_CLUSTER_VIEW=service             the publisher on the first SlurmctldHost, port 6828
//                                         (also when unset or empty)
//   VGPU_CLUSTER_VIEW=tcp:ctl1[:6828]     the publisher at that host and port
//   VGPU_CLUSTER_VIEW=/shared/vgpu/view   a file the publisher writes (a shared file system)
//   VGPU_CLUSTER_VIEW=slurmctld           every planner asks slurmctld itself (a few nodes)
//   VGPU_CLUSTER_VIEW_KEY=/etc/slurm-vgpu/cluster-view.pub   (the default where unset)
//
// Asking slurmctld every period is never a default: a node whose view cannot be had (no key, the
// service down) asks at most once a minute per kind of question (DirectQueryBudget).
//
// Over TCP the key is required: a view steers every node's layout, and only root on the controller
// holds the private key. A file is trusted by its signature where a key is given (any owner: NFS
// root squash makes root's file nobody's), else by its owner as every file of ours is
// (contract/guarded_read.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/node/ports.h"
#include "view_signature.h"

namespace vgpu::agent {

struct ViewSourceSpec {
  enum class Kind { slurmctld, file, tcp };
  Kind kind = Kind::slurmctld;
  std::string path;  // file
  std::string host;  // tcp
  int port = contract::kClusterViewPort;
  std::string public_key;  // a path; "" for none
  // The node whose own view is asked for over TCP and accepted from any source; "" asks for the
  // whole cluster's.
  std::string node;
  // The name it goes by in the log and metrics: "tcp:ctl1:6828", the file's path, "slurmctld".
  [[nodiscard]] std::string name() const;
};

// The setting the environment gives, defaults filled in: `service` and the key's installed path
// where VGPU_CLUSTER_VIEW / VGPU_CLUSTER_VIEW_KEY are unset or empty.
struct ViewEnvironment {
  std::string value;       // "service", "slurmctld", "tcp:...", a path
  std::string public_key;  // a path
  bool defaulted = false;  // VGPU_CLUSTER_VIEW was unset or empty
};
ViewEnvironment view_environment(const char* view, const char* key);

// VGPU_CLUSTER_VIEW's value (`service` already resolved to tcp:<controller>), the key's path and
// the node reading it, checked: `invalid` naming the variable and the value.
Result<ViewSourceSpec> parse_view_source(std::string_view value, std::string_view public_key,
                                         std::string_view node = "");

// One source of views, read again at most once a second (a round asks it several times), keeping
// the last good view while a read fails so that one lost connection costs nothing until the view
// is stale. Time is the caller's: `now` in Unix seconds (the views' clock), `tick` monotonic.
class ClusterViewSource {
 public:
  using Fetch = std::function<Result<std::string>(const ViewSourceSpec&)>;
  static Result<ClusterViewSource> open(ViewSourceSpec spec, Fetch fetch);

  // The latest view fresh enough to steer by; `unavailable` saying why not (unreachable, not
  // genuine, stale since when), the planner then keeps its plan.
  Result<const contract::ClusterView*> fresh_view(std::int64_t now, std::chrono::steady_clock::time_point tick);
  [[nodiscard]] ClusterViewStatus status(std::int64_t now) const;
  [[nodiscard]] const ViewSourceSpec& spec() const { return spec_; }

 private:
  ClusterViewSource(ViewSourceSpec spec, std::optional<ViewVerifier> verifier, Fetch fetch)
      : spec_(std::move(spec)), verifier_(std::move(verifier)), fetch_(std::move(fetch)) {}
  Result<contract::ClusterView> read_view();

  ViewSourceSpec spec_;
  std::optional<ViewVerifier> verifier_;
  Fetch fetch_;
  std::optional<contract::ClusterView> last_;
  std::optional<std::chrono::steady_clock::time_point> read_at_;
  std::string problem_;  // of the last read; "" when it gave a view
};

// The real reads: the file (guarded, by signature where a key is given) or the publisher over TCP.
Result<std::string> fetch_view_text(const ViewSourceSpec& spec);

// Questions a planner asks slurmctld itself while its view is stale: one of each kind a minute
// at most (a bucket of one token, one token a minute), so a thousand planners whose publisher is
// gone add about 17 RPCs a second per kind instead of a thousand every period.
class DirectQueryBudget {
 public:
  static constexpr std::chrono::seconds kRefill{60};
  bool take(std::chrono::steady_clock::time_point tick);
  [[nodiscard]] std::uint64_t taken() const { return taken_; }

 private:
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::uint64_t taken_ = 0;
};

}  // namespace vgpu::agent
