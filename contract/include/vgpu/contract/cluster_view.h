// The cluster view: what one reader on the controller (`vgpu-planner --publish-view`) learns from
// slurmctld once per period for every node's planner, so that slurmctld's load does not grow with
// the nodes (docs/design.md, "One reader on the controller"). Two queries make it, whatever the
// cluster's size: one squeue over every job state we use and one `scontrol -o -d show node`.
//
//   slurm-vgpu-cluster-view 2
//   taken_at 1764790000                      the controller's clock when the queries were made
//   period_s 5                               the publisher's period: the view is stale after 3
//   for n1                                   whose view it is: * for the whole cluster
//   pending 1
//   42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)
//   nodes 2
//   NodeName=n1 Arch=x86_64 ... Gres=vgpu:free:12,vgpu:1g.10gb:2 GresUsed=vgpu:1g.10gb:1 ...
//   NodeName=n2 Arch=x86_64 ...
//   running 1
//   41|n[1-2]                                 a job (squeue's %A) and its nodes (a hostlist)
//   signature ed25519 <128 hex digits>       optional; over every byte before this line
//
// Pending lines are squeue's text in kSqueuePendingFormat (vgpu/node/slurm_text.h reads them),
// node lines scontrol's one-line form. Every section is present and counted; nothing else is
// accepted. A node's own view (`for n1`) is what its planner reads of the whole one: its own
// line, the pending jobs of its partitions and the running jobs on it, so that what the publisher
// sends each period grows with the nodes, not with their square (cluster_view_snapshot.h cuts it).
// The name is signed with the rest: one node's view cannot be passed off as another's. Version 1
// is the whole cluster's view without a `for` line, still read (a publisher of the release before). The signature is what makes a view genuine where its file or its sender cannot be
// trusted by owner (NFS root squash, the network): only root on the controller holds the private
// key (nodeagent/adapters/view_signature.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::contract {

inline constexpr std::string_view kClusterViewFormat = "slurm-vgpu-cluster-view";
inline constexpr std::uint64_t kClusterViewVersion = 2;
// `for *`: every node's lines.
inline constexpr std::string_view kWholeCluster = "*";
// About 250,000 pending jobs, or 5,000 nodes' lines and 100,000 running jobs: a planner's round
// is linear in it (docs/benchmarks.md).
inline constexpr std::uint64_t kClusterViewMaxBytes = 32u << 20;
// A view older than this many publisher periods (and never less than kClusterViewMinStaleS) is
// stale: the planner keeps its plan rather than steer by it.
inline constexpr std::int64_t kClusterViewStalePeriods = 3;
inline constexpr std::int64_t kClusterViewMinStaleS = 15;
// How far the controller's clock may be off a node's: a view is older than a node's event only
// when it was taken at least this long before it (NTP keeps clusters within milliseconds).
inline constexpr std::int64_t kClusterViewClockMarginS = 2;
// The publisher's TCP port where nodes fetch the view (`tcp:<host>[:<port>]`).
inline constexpr int kClusterViewPort = 6828;

struct RunningJob {
  JobId job = 0;
  std::string nodes;  // a Slurm hostlist, as squeue prints it
  bool operator==(const RunningJob&) const = default;
};

struct ClusterView {
  std::int64_t taken_at = 0;  // Unix seconds, the controller's clock
  std::int64_t period_s = 5;
  std::string for_node = std::string(kWholeCluster);  // a node's name, or kWholeCluster
  std::vector<std::string> pending;                   // squeue lines, in squeue's order
  std::map<std::string, std::string> nodes;           // NodeName -> its scontrol line
  std::vector<RunningJob> running;
  bool operator==(const ClusterView&) const = default;

  // Seconds after which this view no longer steers anything.
  [[nodiscard]] std::int64_t stale_after_s() const;
};

// What a view's `for` line and a publisher's request may name: a node name by the contract's one
// rule (names.h, is_valid_node_name), or kWholeCluster.
bool is_view_node_name(std::string_view name);

// The view's text without a signature line.
std::string render_cluster_view(const ClusterView& view);

// A view's text cut into what a signature covers and the signature, when there is one.
struct SignedView {
  std::string_view body;                 // every byte before the signature line
  std::optional<std::string> signature;  // the raw signature bytes (decoded from hex)
};
Result<SignedView> split_view_signature(std::string_view text, std::string_view where);
std::string signature_line(std::string_view signature);

// The one strict reader of a body: `corrupt` naming `where`, the line and the field.
Result<ClusterView> parse_cluster_view(std::string_view body, std::string_view where);

// The file form (a path on the controller or on a shared file system). The one writer: atomic,
// 0644 whatever the umask, not durable (it is rewritten every period).
Result<void> write_cluster_view_file(FileSystem& fs, const std::string& path, std::string_view text);

// How a reader trusts a view file: `owner`, by who owns it (root or `reader_uid`, writable by no
// one else: a file on the node's own disks); `signature`, by nothing about the file (any owner, as
// NFS root squash makes it), the caller then checks the signature. Either way: no symbolic link
// followed, never blocking, a regular file of at most kClusterViewMaxBytes, checked on the
// descriptor that is read (guarded_read.h).
enum class ViewTrust { owner, signature };
Result<std::string> read_cluster_view_file(FileSystem& fs, const std::string& path, uid_t reader_uid, ViewTrust trust);

}  // namespace vgpu::contract
