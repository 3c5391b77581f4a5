// vgpu-tracesim: packing of real cluster traces under whole-GPU, static MIG, first-fit dynamic MIG,
// the slurm-vgpu planner and shared (MPS) instances. See docs/benchmarks.md for the methodology.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "report.h"
#include "simulation.h"

int main(int argc, char** argv) {
  using namespace vgpu::bench;
  CLI::App app{"Replay GPU-cluster traces against MIG placement policies"};
  SimOptions opt;
  std::string policies = "whole,static,firstfit,planner,shared,planner+weights,shared+weights";
  std::string node_choice = "slurm";
  bool json = false;
  app.add_option("--trace", opt.trace_path, "openb pod-list CSV")->required();
  app.add_option("--policy", policies,
                 "comma-separated: whole,static,firstfit,planner,shared,planner+weights,"
                 "shared+weights,planner+prefer,shared+prefer,planner+fill,shared+fill,planner+prefer+fill,"
                 "shared+prefer+fill, "
                 "with MIG mode on demand (multi-GPU tasks on whole GPUs): planner+ondemand,shared+ondemand, "
                 "and FGD's published schedulers "
                 "run in this twin: fgd-twin,bestfit-twin");
  app.add_option("--nodes", opt.nodes_path,
                 "openb node list: real node shapes with CPU and memory (instead of --gpus)");
  app.add_option("--node-choice", node_choice,
                 "slurm: Slurm picks among the nodes the policy can use (production); best: the "
                 "policy picks the best GPU of the cluster (idealised)")
      ->check(CLI::IsMember({"slurm", "best"}));
  app.add_option("--share-min-slices", opt.share_min_slices,
                 "smallest shared instance the shared policy opens, in compute slices")
      ->check(CLI::Range(1, 64));
  app.add_option("--tune-ratio", opt.tune_ratio,
                 "workload tuned to this many times the GPU capacity before shuffling (FGD: 1.3)")
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--replay-seeds", opt.replay_seeds,
                 "replays with jittered arrivals beside the trace's own (waits with spread)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--jitter-s", opt.jitter_s, "largest arrival jitter of those replays, seconds")
      ->check(CLI::Range(0LL, 100'000'000LL));
  app.add_option("--reserve-after-s", opt.reserve_after_s,
                 "replay: a multi-GPU task waiting longer than this reserves a node (-1: never)")
      ->check(CLI::Range(-1LL, 100'000'000LL));
  app.add_option("--start-latency-s", opt.start_latency_s,
                 "replay: each start of a policy that reshapes nodes (firstfit, the planners) comes this "
                 "much after its placement (a planner round, Slurm's split, the instance's creation)")
      ->check(CLI::Range(0LL, 100'000LL));
  app.add_flag("--latency-only-for-new-slots", opt.latency_only_for_new_slots,
               "replay: only starts that no slot left by an ended task (a sticky plan) could serve pay "
               "--start-latency-s; without it every start pays (an upper bound)");
  app.add_option("--published", opt.published_path, "FGD's published table (fgd_published.csv)");
  app.add_option("--seeds", opt.seeds, "shuffles for the arrival experiment")->check(CLI::Range(1, 1000));
  app.add_option("--gpus", opt.gpus, "GPUs in the cluster (default: openb's 6212)")->check(CLI::Range(1, 1'000'000));
  app.add_option("--gpus-per-node", opt.gpus_per_node, "GPUs per node")->check(CLI::Range(1, 64));
  app.add_option("--model", opt.model, "GPU model from the built-in catalog");
  app.add_option("--tasks", opt.max_tasks, "use only the first N trace rows")->check(CLI::Range(1, 100'000'000));
  app.add_option("--util-buckets", opt.util_buckets, "points in the utilisation series")->check(CLI::Range(1, 100'000));
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  opt.node_choice = node_choice == "best" ? NodeChoice::best : NodeChoice::slurm;

  std::size_t start = 0;
  while (start <= policies.size()) {
    std::size_t comma = policies.find(',', start);
    std::string name = policies.substr(start, comma == std::string::npos ? comma : comma - start);
    auto kind = parse_policy(name);
    if (!kind) {
      std::fprintf(stderr, "vgpu-tracesim: --policy: %s\n", kind.error().message.c_str());
      return 2;
    }
    opt.policies.push_back(*kind);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }

  auto sim = run_simulation(opt);
  if (!sim) {
    std::fprintf(stderr, "vgpu-tracesim: %s\n", sim.error().message.c_str());
    return 1;
  }
  if (json) std::printf("%s\n", to_json(*sim).dump(1).c_str());
  else
    std::printf("%s", to_table(*sim).c_str());
  return 0;
}
