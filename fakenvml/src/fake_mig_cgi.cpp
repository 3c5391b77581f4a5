// fake-mig-cgi GPU PROFILE_ID@START...: what an admin's `nvidia-smi mig -i GPU -cgi ... -C` does,
// through the NVML calls it makes: each GPU instance of that profile id at that memory slice, and
// one compute instance spanning it. Tests use it to give a node a layout that slurm-vgpu did not
// make (an admin's static MIG layout). Prints each instance's MIG UUID. Test double.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nvml_abi.h"

namespace {

bool number(const char* text, unsigned& out) {
  char* end = nullptr;
  out = static_cast<unsigned>(std::strtoul(text, &end, 10));
  return *text != '\0' && (*end == '\0' || *end == '@');
}

int check(nvmlReturn_t rc, const char* call) {
  if (rc == NVML_SUCCESS) return 0;
  std::fprintf(stderr, "fake-mig-cgi: %s: %s\n", call, nvmlErrorString(rc));
  return 1;
}

// The MIG UUID of the compute instance just made: the MIG device whose ids are (gi, ci).
std::string mig_uuid(nvmlDevice_t dev, unsigned gi, unsigned ci) {
  unsigned max = 0;
  if (nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS) return "?";
  for (unsigned m = 0; m < max; ++m) {
    nvmlDevice_t mig = nullptr;
    unsigned g = 0, c = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig) == NVML_SUCCESS &&
        nvmlDeviceGetGpuInstanceId(mig, &g) == NVML_SUCCESS &&
        nvmlDeviceGetComputeInstanceId(mig, &c) == NVML_SUCCESS && g == gi && c == ci &&
        nvmlDeviceGetUUID(mig, uuid, sizeof uuid) == NVML_SUCCESS)
      return uuid;
  }
  return "?";
}

int create(nvmlDevice_t dev, unsigned profile_id, unsigned start) {
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = nvmlGpuInstanceProfileInfo_v2;
  bool known = false;
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx)
    known |= nvmlDeviceGetGpuInstanceProfileInfoV(dev, idx, &info) == NVML_SUCCESS && info.id == profile_id;
  if (!known) {
    std::fprintf(stderr, "fake-mig-cgi: profile id %u: not a GPU-instance profile of this GPU\n", profile_id);
    return 1;
  }
  // The placement's size is the profile's (nvmlDeviceGetGpuInstancePossiblePlacements_v2 lists them).
  nvmlGpuInstancePlacement_t places[16] = {};
  unsigned count = 16;
  if (check(nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, profile_id, places, &count),
            "nvmlDeviceGetGpuInstancePossiblePlacements_v2"))
    return 1;
  const nvmlGpuInstancePlacement_t* place = nullptr;
  for (unsigned i = 0; i < count; ++i)
    if (places[i].start == start) place = &places[i];
  if (!place) {
    std::fprintf(stderr, "fake-mig-cgi: profile id %u: no placement starts at slice %u\n", profile_id, start);
    return 1;
  }
  nvmlGpuInstance_t gi = nullptr;
  nvmlComputeInstance_t ci = nullptr;
  nvmlComputeInstanceProfileInfo_t ci_profile{};
  nvmlGpuInstanceInfo_t gi_info{};
  nvmlComputeInstanceInfo_t ci_info{};
  if (check(nvmlDeviceCreateGpuInstanceWithPlacement(dev, profile_id, place, &gi),
            "nvmlDeviceCreateGpuInstanceWithPlacement") ||
      check(nvmlGpuInstanceGetInfo(gi, &gi_info), "nvmlGpuInstanceGetInfo"))
    return 1;
  // The compute-instance profile that spans the whole GPU instance is the largest one it offers.
  for (unsigned idx = 0; idx < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlComputeInstanceProfileInfo_t p{};
    if (nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, idx, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &p) ==
            NVML_SUCCESS &&
        p.sliceCount >= ci_profile.sliceCount)
      ci_profile = p;
  }
  if (check(nvmlGpuInstanceCreateComputeInstance(gi, ci_profile.id, &ci), "nvmlGpuInstanceCreateComputeInstance") ||
      check(nvmlComputeInstanceGetInfo_v2(ci, &ci_info), "nvmlComputeInstanceGetInfo_v2"))
    return 1;
  std::printf("%s\n", mig_uuid(dev, gi_info.id, ci_info.id).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned gpu = 0;
  if (argc < 3 || !number(argv[1], gpu)) {
    std::fprintf(stderr, "usage: fake-mig-cgi GPU PROFILE_ID@START...\n");
    return 2;
  }
  if (check(nvmlInit_v2(), "nvmlInit_v2")) return 1;
  nvmlDevice_t dev = nullptr;
  int failed = check(nvmlDeviceGetHandleByIndex_v2(gpu, &dev), "nvmlDeviceGetHandleByIndex_v2");
  for (int i = 2; i < argc && !failed; ++i) {
    unsigned profile_id = 0, start = 0;
    const char* at = std::strchr(argv[i], '@');
    if (!number(argv[i], profile_id) || !at || !number(at + 1, start)) {
      std::fprintf(stderr, "fake-mig-cgi: \"%s\": not PROFILE_ID@START\n", argv[i]);
      failed = 1;
      break;
    }
    failed = create(dev, profile_id, start);
  }
  nvmlShutdown();
  return failed;
}
