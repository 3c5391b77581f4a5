// vgpu-scrub: zero all memory of the one GPU or MIG instance in CUDA_VISIBLE_DEVICES, verify a
// sample, print one JSON line. Exit codes are the contract with the epilog (docs/scrub.md).
#include <cstdio>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cuda_device.h"
#include "report.h"
#include "scrub_flow.h"

int main(int argc, char** argv) {
  using vgpu::scrub::Exit;
  CLI::App app{"Zero every allocatable byte of the visible CUDA device and verify a sample; prints one JSON line"};
  vgpu::scrub::ScrubOptions o;
  std::uint64_t seed = 0;
  std::size_t max_chunk = 0;
  const std::map<std::string, vgpu::scrub::Method> methods{{"auto", vgpu::scrub::Method::automatic},
                                                           {"kernel", vgpu::scrub::Method::kernel},
                                                           {"memset", vgpu::scrub::Method::memset}};
  app.add_option("--method", o.method, "auto (time both on 1 GiB, use the faster), kernel, memset")
      ->transform(CLI::CheckedTransformer(methods, CLI::ignore_case));
  app.add_option("--samples", o.random_samples, "random 8-byte words to read back (plus first/last of each chunk)");
  auto* seed_opt = app.add_option("--seed", seed, "sample seed (default: random, echoed in the output)");
  app.add_option("--max-chunk", max_chunk, "cap on one allocation in bytes (default: none)");
  app.add_flag("--bench", o.bench, "also time cudaMemset, the zero kernel and D2D cudaMemcpy on the largest chunk");
  app.add_option("--reps", o.bench_reps, "timed repetitions per benchmark, after one warm-up")
      ->check(CLI::Range(1, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Exit::usage);
  }
  if (*seed_opt) o.seed = seed;
  if (max_chunk > 0) o.chunks.max_chunk = max_chunk;

  const auto device = vgpu::scrub::make_cuda_device();
  const auto report = vgpu::scrub::run_scrub(*device, o);
  fmt::print("{}\n", vgpu::scrub::to_json_line(report));
  std::fflush(stdout);
  if (report.exit != Exit::ok)
    fmt::print(stderr, "vgpu-scrub: {}: {}\n", vgpu::scrub::status_name(report.exit), report.error);
  return static_cast<int>(report.exit);
}
