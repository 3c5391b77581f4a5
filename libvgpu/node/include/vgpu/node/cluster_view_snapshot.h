// The publisher's two queries, made into one cluster view (contract/cluster_view.h): what every
// node's planner would otherwise ask slurmctld itself each round.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/policy/policy_hostlist.h"

namespace vgpu {

// One squeue over the states a planner cares about: the pending fields (kSqueuePendingFormat)
// first, then the state, the job's number and its nodes.
inline constexpr std::string_view kSqueueViewStates = "PD,R,CF,CG,S";
inline constexpr std::string_view kSqueueViewFormat = "%i|%P|%Q|%V|%r|%b|%D|%u|%l|%v|%T|%A|%N";

// What marks a pending job's GRES or a node's line as ours ("gres/vgpu:1g.10gb:2", "Gres=vgpu:...").
inline constexpr std::string_view kVgpuGresMark = "vgpu:";

// `squeue -h -t kSqueueViewStates -o kSqueueViewFormat` and `scontrol -o -d show node`, taken at
// `taken_at`: `corrupt` naming the line that is not theirs. Kept: pending jobs that ask for vgpu,
// nodes that have it, every running job (a viz VM's or a share's job may not be a vgpu job's name).
// What the rest of the cluster waits for or runs on costs the nodes nothing to read.
Result<contract::ClusterView> cluster_view_from_slurm(std::string_view squeue, std::string_view nodes,
                                                      std::int64_t taken_at, std::int64_t period_s);

// One whole view cut per node (`for <node>`, contract/cluster_view.h): the node's own line, the
// pending jobs it is a preparer for (demand_spread.h: a few nodes of the job's partitions, more
// the longer it waits; every node of them for a job held to a reservation or one whose line
// another release prints differently), the running jobs whose nodes include it. The publisher
// answers each node with its cut, so a period's bytes and a burst's reshapes grow with the jobs
// instead of with the nodes times the jobs; a planner reads nothing else of the view. Indexed once
// per view: a job on one node (most of them) is found by its name, only a multi-node job's
// hostlist is matched against each node asked about.
class ClusterViewCuts {
 public:
  explicit ClusterViewCuts(contract::ClusterView whole);
  [[nodiscard]] contract::ClusterView cut(const std::string& node) const;
  [[nodiscard]] const contract::ClusterView& whole() const { return whole_; }

 private:
  void spread_pending();

  contract::ClusterView whole_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> pending_by_node_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> running_by_node_;
  std::vector<std::pair<NodeList, std::size_t>> running_on_lists_;
};

// The pending lines of a view as one squeue text (kSqueuePendingFormat), for the wide-job bookings.
std::string pending_text(const contract::ClusterView& view);

}  // namespace vgpu
