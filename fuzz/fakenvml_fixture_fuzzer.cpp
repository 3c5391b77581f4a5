// The fake libnvidia-ml.so.1's fixture loader (fakenvml/src/fixture.h): hand-written fixtures,
// generated ones, and vgpu-nvml-probe captures from real hardware. load_fixture() takes a path,
// so each input is put in a memfd and read back through /proc/self/fd (no disk writes).
// Properties: an accepted fixture has GPUs with unique uuids, placements inside the GPU's 32
// memory slices, NVLinks NVML can name and topology pairs of two different GPUs of the node, and
// loading is deterministic.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fixture.h"
#include "fuzz_check.h"

namespace {

int input_fd() {
  static const int fd = memfd_create("fakenvml-fixture", 0);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = input_fd();
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(ftruncate(fd, 0) == 0);
  FUZZ_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  std::string error;
  auto fixture = fakenvml::load_fixture(path, error);
  if (!fixture) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(error.empty());
  std::set<std::string> uuids;
  for (const auto& gpu : fixture->gpus) {
    FUZZ_CHECK(uuids.insert(gpu.uuid).second);
    // The largest GI profile sets the slice counts the fake reports for the GPU.
    for (const auto& gi : gpu.gi_profiles) {
      if (!gi.error) FUZZ_CHECK(gi.slice_count <= gpu.compute_slices);
      // "placement out of range": a placement lies within the 32 memory slices NVML can name.
      for (const auto& pl : gi.placements) {
        FUZZ_CHECK(pl.size >= 1);
        FUZZ_CHECK(std::uint64_t{pl.start} + pl.size <= 32);
      }
    }
    FUZZ_CHECK(gpu.memory_slices <= 32);
    if (gpu.nvlinks)
      for (const auto& l : *gpu.nvlinks) FUZZ_CHECK(l.link < NVML_NVLINK_MAX_LINKS);
  }
  // A recorded pair joins two different GPUs of the node.
  for (const auto& p : fixture->pairs)
    FUZZ_CHECK(p.a != p.b && p.a < fixture->gpus.size() && p.b < fixture->gpus.size());
  std::string error2;
  auto again = fakenvml::load_fixture(path, error2);
  FUZZ_CHECK(again.has_value() && again->gpus.size() == fixture->gpus.size());
  return 0;
}
