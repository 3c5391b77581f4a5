// fake-nvml-smi: prints what the fake NVML holds (GPUs, MIG mode, instances, MIG UUIDs), through the
// same NVML calls a client makes, for debugging tests and demos. Read-only.
#include <cstdio>
#include <vector>

#include "nvml_abi.h"

namespace {

int check(nvmlReturn_t rc, const char* call) {
  if (rc == NVML_SUCCESS) return 0;
  std::fprintf(stderr, "fake-nvml-smi: %s: %s\n", call, nvmlErrorString(rc));
  return 1;
}

void list_instances(nvmlDevice_t dev) {
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    if (nvmlDeviceGetGpuInstanceProfileInfoV(dev, idx, &info) != NVML_SUCCESS) continue;
    std::vector<nvmlGpuInstance_t> gis(info.instanceCount);
    unsigned n = 0;
    if (gis.empty() || nvmlDeviceGetGpuInstances(dev, info.id, gis.data(), &n) != NVML_SUCCESS) continue;
    for (unsigned i = 0; i < n; ++i) {
      nvmlGpuInstanceInfo_t gi{};
      if (nvmlGpuInstanceGetInfo(gis[i], &gi) != NVML_SUCCESS) continue;
      std::printf("  gi %u  %-14s profile %u  placement {%u,%u}\n", gi.id, info.name, gi.profileId, gi.placement.start,
                  gi.placement.size);
    }
  }
  unsigned max = 0;
  if (nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS) return;
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    if (nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS) continue;
    unsigned gi = 0, ci = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    nvmlDeviceGetGpuInstanceId(mig, &gi);
    nvmlDeviceGetComputeInstanceId(mig, &ci);
    nvmlDeviceGetUUID(mig, uuid, sizeof uuid);
    std::printf("  mig device %u: gi %u ci %u  %s\n", i, gi, ci, uuid);
  }
}

}  // namespace

int main() {
  if (check(nvmlInit_v2(), "nvmlInit_v2")) return 1;
  unsigned count = 0;
  if (check(nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount_v2")) return 1;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (check(nvmlDeviceGetHandleByIndex_v2(i, &dev), "nvmlDeviceGetHandleByIndex_v2")) return 1;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {}, uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    nvmlDeviceGetName(dev, name, sizeof name);
    nvmlDeviceGetUUID(dev, uuid, sizeof uuid);
    unsigned cur = 0, pend = 0;
    nvmlReturn_t mig = nvmlDeviceGetMigMode(dev, &cur, &pend);
    std::printf("gpu %u: %s  %s  MIG %s\n", i, name, uuid,
                mig != NVML_SUCCESS ? nvmlErrorString(mig)
                : cur               ? "enabled"
                                    : "disabled");
    if (mig == NVML_SUCCESS && cur) list_instances(dev);
  }
  return check(nvmlShutdown(), "nvmlShutdown");
}
