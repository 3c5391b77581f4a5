// What one planner round costs with a long queue. A node of 8 H100-80GB whose idle space is
// already prepared (planner.prepare_slots: an idle instance stands in every slot of the idle
// layout), and N pending lines of one shape: the first round after the queue appears (it reshapes
// the node: idle instances destroyed, a new plan, shrink, confirm, grow) and a steady round after
// it (same queue, nothing to change). The round is the node's whole round over the test doubles:
// the squeue text parsed, demand, both candidate plans, the ledger's reads and writes on disk;
// NVML's latencies and slurmctld's answers are left out (docs/benchmarks.md says where they are
// measured), and the doubles' Slurm takes every split at once.
//   vgpu-bench-planner-round [--jobs 10000,50000,100000] [--repeat 5] [--shapes all|NAME,...]
// Prints a table: median and min-max wall time per round, and the median per 10,000 lines.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "node_doubles.h"
#include "vgpu/node/planner.h"

namespace {

namespace fs = std::filesystem;
using vgpu::testing::CountingPublisher;
using vgpu::testing::FakeSlurm;
using vgpu::testing::MemoryBackend;
using vgpu::testing::ScriptedScrubber;

constexpr const char* kPolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120, "prepare_slots": true},
  "partitions": {"gpu": {"nodes": ["n1"], "scrub": "optional",
    "profiles": {"H100-80GB": ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]},
    "idle_layout": ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]}}
})";

struct Shape {
  std::string name;
  std::string why;
  std::vector<std::string> gres;  // cycled through, one per line
  bool arrays = false;            // every line a job array of 100 pending tasks
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"small", "1g.10gb:4 (inference bursts)", {"1g.10gb:4"}, false},
      {"hopeless", "2g.20gb:4096 (never fits, every unit once tried)", {"2g.20gb:4096"}, false},
      {"mixed",
       "1g.10gb:1, 2g.20gb:2, 3g.40gb:1, 7g.80gb:1, 1g.20gb:3 (arrays of 100)",
       {"1g.10gb:1", "2g.20gb:2", "3g.40gb:1", "7g.80gb:1", "1g.20gb:3"},
       true},
  };
  return all;
}

std::string queue(const Shape& shape, int lines) {
  std::string text;
  text.reserve(static_cast<std::size_t>(lines) * 80);
  for (int i = 0; i < lines; ++i) {
    const std::string id = shape.arrays ? fmt::format("{}_[1-100]", 100000 + i) : std::to_string(100000 + i);
    // Slurm's order: a spread of priorities and submit times.
    text += fmt::format("{}|gpu|{}|2027-01-15T{:02}:{:02}:00|Resources|gres:vgpu:{}|1|user{}|1:00:00|(null)\n", id,
                        1000 + i % 97, 8 + i % 10, i % 60, shape.gres[static_cast<std::size_t>(i) % shape.gres.size()],
                        i % 50);
  }
  return text;
}

// One node, prepared: its first round advertises the idle layout, the second creates the
// instances in it.
struct Node {
  fs::path dir;
  vgpu::PolicyFile policy;
  std::unique_ptr<vgpu::LedgerStore> store;
  MemoryBackend backend{*vgpu::Catalog::builtin().find_model("H100-80GB"), 8};
  std::unique_ptr<FakeSlurm> slurm;
  ScriptedScrubber scrubber;
  CountingPublisher publisher;
  vgpu::NodeContext ctx;
  vgpu::PlannerState planner;

  explicit Node(int serial) {
    dir = fs::temp_directory_path() / fmt::format("vgpu-bench-round-{}-{}", ::getpid(), serial);
    fs::remove_all(dir);
    fs::create_directories(dir / "n1");
    fs::permissions(dir / "n1", fs::perms::owner_all, fs::perm_options::replace);
    auto parsed = vgpu::parse_policy(kPolicy, "bench-policy.json");
    if (!parsed) throw std::runtime_error(parsed.error().message);
    policy = std::move(*parsed);
    store = std::make_unique<vgpu::LedgerStore>((dir / "n1").string());
    slurm = std::make_unique<FakeSlurm>((dir / "n1" / "advertisement.json").string());
    vgpu::testing::wire_test_node(ctx, dir.string(), policy, *store, backend, *slurm, scrubber, publisher);
    ctx.now = [] { return std::int64_t{1'800'000'000}; };
    ctx.log = [](const std::string&) {};
    for (int i = 0; i < 2; ++i)
      if (auto r = vgpu::run_planner_round(ctx, planner); !r) throw std::runtime_error(r.error().message);
  }
  ~Node() { fs::remove_all(dir); }
  double round_ms() {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = vgpu::run_planner_round(ctx, planner);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r) throw std::runtime_error(r.error().message);
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
};

struct Spread {
  double median, min, max;
};
Spread spread(std::vector<double> v) {
  std::ranges::sort(v);
  return {v[v.size() / 2], v.front(), v.back()};
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find(',', start);
    out.push_back(std::stoi(text.substr(start, end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> jobs = {10'000, 50'000, 100'000};
  int repeat = 5;
  std::string only = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--jobs") jobs = parse_list(value);
    else if (flag == "--repeat")
      repeat = std::max(1, std::stoi(value));
    else if (flag == "--shapes")
      only = value;
    else {
      std::fprintf(stderr, "usage: %s [--jobs N,N,...] [--repeat R] [--shapes all|small,hopeless,mixed]\n", argv[0]);
      return 2;
    }
  }
  try {
    fmt::print("planner round, node of 8 H100-80GB with its idle layout prepared (56 idle 1g.10gb), {} run(s) each\n",
               repeat);
    fmt::print("{:<9} {:>8} {:>30} {:>30} {:>14}\n", "shape", "lines", "first round ms (median, min-max)",
               "steady round ms (median, min-max)", "steady/10,000");
    int serial = 0;
    for (const auto& shape : shapes()) {
      if (only != "all" && only.find(shape.name) == std::string::npos) continue;
      for (int n : jobs) {
        const std::string text = queue(shape, n);
        std::vector<double> first, steady;
        for (int r = 0; r < repeat; ++r) {
          Node node(serial++);
          node.slurm->squeue = text;
          first.push_back(node.round_ms());
          steady.push_back(node.round_ms());
        }
        const auto f = spread(first), s = spread(steady);
        fmt::print("{:<9} {:>8} {:>30} {:>30} {:>14.1f}\n", shape.name, n,
                   fmt::format("{:.1f} ({:.1f}-{:.1f})", f.median, f.min, f.max),
                   fmt::format("{:.1f} ({:.1f}-{:.1f})", s.median, s.min, s.max), s.median * 10'000.0 / n);
      }
    }
    for (const auto& shape : shapes()) fmt::print("  {}: {}\n", shape.name, shape.why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-bench-planner-round: %s\n", e.what());
    return 1;
  }
  return 0;
}
