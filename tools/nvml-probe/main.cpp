// vgpu-nvml-probe: prints, as JSON, what NVML reports about this node's GPUs and how the device's
// MIG catalog compares with the built-in one. Query-only by construction (see CMakeLists.txt): safe
// on production nodes. Exit status 0 even when NVML refuses things; the refusals are the data.
#include <CLI/CLI.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <vector>

#include <unistd.h>

#include "probe_report.h"

int main(int argc, char** argv) {
  CLI::App app{"vgpu-nvml-probe: read-only NVML/MIG report, loadable as a fake-NVML fixture"};
  std::string library, output;
  app.add_option("--library", library, "NVML library to load (default: $VGPU_NVML_LIBRARY or libnvidia-ml.so.1)");
  app.add_option("-o,--output", output, "write the JSON here instead of stdout");
  double gpm_seconds = 1;
  app.add_option("--gpm-seconds", gpm_seconds,
                 "GPM utilisation and memory per instance (or GPU) over this many seconds; 0: skip")
      ->check(CLI::Range(0.0, 60.0));
  std::vector<int> choose_whole;
  app.add_option("--choose-whole", choose_whole,
                 "also report which N whole GPUs (all free) the planner's placement gives a request for N")
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);

  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[32] = {};
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));

  auto reader = vgpu::nvml::Reader::open(library);
  auto json = vgpu::probe::report(*reader, std::string("vgpu-nvml-probe on ") + host + " at " + when, gpm_seconds,
                                  choose_whole);
  std::string text = json.dump(1) + "\n";
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(output);
  out << text;
  if (!out.flush()) {
    std::cerr << "vgpu-nvml-probe: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}
