// Which node Slurm gives a one-node job, as select/cons_tres decides it with the default
// SelectTypeParameters (no LLN, no pack_serial_at_end, no topology plugin):
// src/plugins/topology/common/eval_nodes.c, _eval_nodes_consec() (26.05; the same rule in
// cons_tres/job_test.c of 22.05). Slurm first filters the nodes that can run the job at all (its
// GRES type free, enough CPU and memory), groups the usable nodes into runs of consecutive node
// indices of one weight, picks the run of the lowest weight, then with the fewest available CPUs
// (the first on ties), and inside it the node with the fewest available CPUs that still suffice
// (the first on ties). So with equal weights Slurm best-fits on CPUs, not on GPUs: the GPU policy
// only decides which nodes are usable, unless the planners steer the weights
// (policy planner.node_weights).
#pragma once

namespace vgpu::bench {

// `usable(n)`: the job can run on node n now. `free_cpu(n)`: CPUs Slurm counts as available there
// (any unit). `weight(n)`: the node's Slurm weight. Returns -1 when no node is usable.
template <class Usable, class FreeCpu, class Weight>
int slurm_node_choice(int nodes, long long need_cpu, Usable&& usable, FreeCpu&& free_cpu, Weight&& weight) {
  int best_first = -1, best_last = -1;
  long long best_run_cpu = 0, best_weight = 0;
  for (int n = 0; n < nodes;) {
    if (!usable(n)) {
      ++n;
      continue;
    }
    int first = n;
    long long run_cpu = 0, run_weight = weight(n);
    for (; n < nodes && usable(n) && weight(n) == run_weight; ++n) run_cpu += free_cpu(n);
    // Every usable node suffices alone, so every run is sufficient: the lightest run wins, then
    // the tightest.
    if (best_first < 0 || run_weight < best_weight || (run_weight == best_weight && run_cpu < best_run_cpu)) {
      best_first = first;
      best_last = n - 1;
      best_run_cpu = run_cpu;
      best_weight = run_weight;
    }
  }
  int best = -1;
  long long best_cpu = 0;
  for (int n = best_first; best_first >= 0 && n <= best_last; ++n) {
    long long c = free_cpu(n);
    if (best < 0 || c < best_cpu) {
      best = n;
      best_cpu = c;
      if (c == need_cpu) break;
    }
  }
  return best;
}

// Every node of one weight (slurm.conf's default).
template <class Usable, class FreeCpu>
int slurm_node_choice(int nodes, long long need_cpu, Usable&& usable, FreeCpu&& free_cpu) {
  return slurm_node_choice(nodes, need_cpu, usable, free_cpu, [](int) { return 1LL; });
}

}  // namespace vgpu::bench
