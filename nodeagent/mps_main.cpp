// vgpu-mps: the node's CUDA MPS control daemons for shared instances, by hand. What the prolog and
// epilog will do for a shared instance's first and last share, through the same adapter, so that
// an admin can look at, open and close them, and so that the adapter can be run on a real GPU
// (benchmarks/mps/h100_mps_adapter.sh):
//   vgpu-mps open  --device MIG-<uuid> --model H100-80GB --profile 3g.40gb --shares 4
//   vgpu-mps close --device MIG-<uuid>
//   vgpu-mps list
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "adapters.h"
#include "vgpu/core/catalog.h"
#include "vgpu/core/shared_instance.h"
#include "vgpu/node/mps_text.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int report(const vgpu::Error& error) {
  std::fprintf(stderr, "vgpu-mps: %s\n", error.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    CLI::App app{"vgpu-mps - the CUDA MPS control daemons of this node's shared instances"};
    app.require_subcommand(1);
    std::string root{vgpu::kDefaultMpsRoot};
    app.add_option("--root", root, "Where the daemons' pipe and log directories live")->capture_default_str();
    std::string device, model, profile;
    int shares = 0;
    auto* open = app.add_subcommand("open", "Start the daemon of an instance with each share's limits");
    open->add_option("--device", device, "The instance's MIG-<uuid> (GPU-<uuid> for a whole GPU)")->required();
    open->add_option("--model", model, "The GPU's model as the catalog names it (H100-80GB)")->required();
    open->add_option("--profile", profile, "The instance's profile (3g.40gb)")->required();
    open->add_option("--shares", shares, "How many equal shares the instance holds")->required();
    auto* close = app.add_subcommand("close", "Quit an instance's daemon and remove its directories");
    close->add_option("--device", device, "The instance's MIG-<uuid>")->required();
    app.add_subcommand("list", "The devices with a daemon's directories here");
    CLI11_PARSE(app, argc, argv);

    auto mps = vgpu::agent::make_command_mps_control(root);
    const auto start = std::chrono::steady_clock::now();
    if (open->parsed()) {
      auto gpu_model = vgpu::Catalog::builtin().require_model(model);
      if (!gpu_model) return report(gpu_model.error());
      const vgpu::Profile* p = (*gpu_model)->find_profile(profile);
      if (!p) return report({vgpu::ErrorCode::not_found, fmt::format("profile {}: unknown on {}", profile, model)});
      auto limits = vgpu::share_limits(*p, shares);
      if (!limits) return report(limits.error());
      auto pipe = mps->open(device, *limits);
      if (!pipe) return report(pipe.error());
      fmt::print("vgpu-mps: {}: daemon up in {:.0f} ms; each of {} shares: {} MiB, {} % of the SMs\n", device,
                 ms_since(start), shares, limits->memory_mib, limits->thread_percentage);
      fmt::print("CUDA_MPS_PIPE_DIRECTORY={}\n", *pipe);
      return 0;
    }
    if (close->parsed()) {
      if (auto closed = mps->close(device); !closed) return report(closed.error());
      fmt::print("vgpu-mps: {}: closed in {:.0f} ms\n", device, ms_since(start));
      return 0;
    }
    auto devices = mps->devices();
    if (!devices) return report(devices.error());
    for (const auto& d : *devices) fmt::print("{}\n", d);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-mps: %s\n", e.what());
    return 1;
  }
}
