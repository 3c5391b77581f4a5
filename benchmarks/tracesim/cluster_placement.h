// plan_node() chooses among one node's GPUs; a cluster simulator must also choose the node. These
// are the cluster-level rules the "planner" policy adds on top of the plugin's per-node rule, kept
// pure so they could move into libvgpu unchanged.
#pragma once

namespace vgpu::bench {

struct GpuCandidate {
  int gpu = 0;
  long loss = 0;             // options_score lost by placing there (plan_node's criterion)
  int node_free_slices = 0;  // free compute slices on the candidate's node
};

// plan_node's order (least loss, then lowest GPU) with one cluster-level tie-break between: the
// fuller node wins, so empty nodes stay empty for tasks that need all of a node's GPUs.
[[nodiscard]] inline bool better_candidate(const GpuCandidate& a, const GpuCandidate& b) {
  if (a.loss != b.loss) return a.loss < b.loss;
  if (a.node_free_slices != b.node_free_slices) return a.node_free_slices < b.node_free_slices;
  return a.gpu < b.gpu;
}

// For a task needing `want` whole GPUs on one node: best fit (the node with the fewest empty GPUs
// that still has enough), lowest node on ties. Returns -1 when no node has enough.
template <class EmptyGpusOfNode>
int best_fit_node(int nodes, int want, EmptyGpusOfNode&& empty_gpus) {
  int best = -1, best_empty = 0;
  for (int n = 0; n < nodes; ++n) {
    int e = empty_gpus(n);
    if (e >= want && (best < 0 || e < best_empty)) {
      best = n;
      best_empty = e;
    }
  }
  return best;
}

}  // namespace vgpu::bench
