// fake-nvml-load UUID SM_PCT DRAM_PCT [MEMORY_MIB]: what a test job runs to make its MIG instance
// ("MIG-...", e.g. $CUDA_VISIBLE_DEVICES) or a whole GPU without MIG ("GPU-...") look busy to
// the fake NVML's GPM and memory queries, from now until it is set again or the instance goes.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_control.h"
#include "nvml_abi.h"

namespace {

bool has_uuid(nvmlDevice_t dev, const char* want) {
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  return nvmlDeviceGetUUID(dev, uuid, sizeof uuid) == NVML_SUCCESS && std::strcmp(uuid, want) == 0;
}

// The physical GPU or MIG device with this UUID, through the calls a client makes.
nvmlDevice_t find(const char* want) {
  unsigned count = 0;
  if (nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) return nullptr;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS) continue;
    if (has_uuid(dev, want)) return dev;
    unsigned max = 0;
    if (nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS) continue;
    for (unsigned m = 0; m < max; ++m) {
      nvmlDevice_t mig = nullptr;
      if (nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig) == NVML_SUCCESS && has_uuid(mig, want)) return mig;
    }
  }
  return nullptr;
}

bool number(const char* text, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text, &end);
  return errno == 0 && end != text && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  double sm = 0, dram = 0, mem = 0;
  if ((argc != 4 && argc != 5) || !number(argv[2], sm) || !number(argv[3], dram) ||
      (argc == 5 && (!number(argv[4], mem) || mem < 0))) {
    std::fprintf(stderr, "usage: fake-nvml-load UUID SM_PCT DRAM_PCT [MEMORY_MIB]\n");
    return 2;
  }
  if (nvmlReturn_t rc = nvmlInit_v2(); rc != NVML_SUCCESS) {
    std::fprintf(stderr, "fake-nvml-load: nvmlInit_v2: %s\n", nvmlErrorString(rc));
    return 1;
  }
  int status = 0;
  if (nvmlDevice_t dev = find(argv[1]); !dev) {
    std::fprintf(stderr, "fake-nvml-load: %s: no GPU or MIG device with this UUID\n", argv[1]);
    status = 1;
  } else if (nvmlReturn_t rc = vgpuFakeSetActivity(dev, sm, dram, static_cast<unsigned long long>(mem));
             rc != NVML_SUCCESS) {
    std::fprintf(stderr, "fake-nvml-load: %s: sm %s%%, dram %s%%, %s MiB: %s\n", argv[1], argv[2], argv[3],
                 argc == 5 ? argv[4] : "0", nvmlErrorString(rc));
    status = 1;
  }
  nvmlShutdown();
  return status;
}
