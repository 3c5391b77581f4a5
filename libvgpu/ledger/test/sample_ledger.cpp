#include "sample_ledger.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vgpu::testing {

Ledger sample_ledger() {
  Ledger l;
  l.node = "gpu-node-1";
  l.gpus = {{0, "GPU-11111111-2222-3333-4444-555555555555", "H100-80GB", "0000:00:06.0"},
            {1, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "A100-40GB", "00000000:00:07.0"}};
  l.instances = {
      {0,
       "3g.40gb",
       {0, 4},
       2,
       0,
       "MIG-0a0a0a0a-0000-0000-0000-000000000001",
       42u,
       "alice",
       InstanceState::ready,
       1'700'000'000,
       false},
      {0,
       "1g.10gb",
       {4, 1},
       13,
       0,
       "MIG-0a0a0a0a-0000-0000-0000-000000000002",
       std::nullopt,
       "",
       InstanceState::scrubbing,
       1'700'000'100,
       false},
      {1,
       "7g.40gb",
       {0, 8},
       0,
       0,
       "MIG-0b0b0b0b-0000-0000-0000-000000000003",
       std::nullopt,
       "",
       InstanceState::quarantined,
       1'700'000'200,
       true},
  };
  l.vms = {{42, "viz-job-42", "MIG-0a0a0a0a-0000-0000-0000-000000000001", VmState::running}};
  l.plan.generation = 7;
  l.plan.slots = {{0, "1g.10gb", {5, 1}, 43u}, {0, "1g.10gb", {6, 1}, std::nullopt}};
  return l;
}

HardwareView sample_hardware() {
  HardwareView v;
  for (const auto& g : sample_ledger().gpus) v.gpus.push_back({g.index, g.uuid, g.model, g.pci_bus_id});
  for (const auto& i : sample_ledger().instances)
    v.instances.push_back({i.gpu, i.profile, i.placement, i.gpu_instance_id, i.compute_instance_id, i.mig_uuid});
  return v;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/vgpu-ledger-test.XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& text, unsigned mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << text;
  }
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

}  // namespace vgpu::testing
