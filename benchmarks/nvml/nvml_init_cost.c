// What a hook pays for NVML on a real node before it can do anything: every vgpu-prolog and
// vgpu-epilog is a new process, so it loads libnvidia-ml.so.1, calls nvmlInit_v2, reads the GPUs
// (what backends/nvml's reader asks first: count, handle, name, UUID, memory, MIG mode) and shuts
// NVML down again. This program does exactly that once, read-only, and prints the phases in
// microseconds on one line; benchmarks/nvml/nvml_init_cost.sh runs it in many fresh processes.
// It changes nothing on the GPU (no MIG mode, compute mode, clocks, power or persistence).
#include <dlfcn.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#define LOAD(name)                                                    \
  name##_fn name = (name##_fn)dlsym(lib, #name);                      \
  if (!name) {                                                        \
    fprintf(stderr, "nvml_init_cost: %s missing from NVML\n", #name); \
    return 2;                                                         \
  }

typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned*, unsigned*);

int main(void) {
  const double t0 = now_us();
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "nvml_init_cost: %s\n", dlerror());
    return 2;
  }
  LOAD(nvmlInit_v2)
  LOAD(nvmlShutdown)
  LOAD(nvmlDeviceGetCount_v2)
  LOAD(nvmlDeviceGetHandleByIndex_v2)
  LOAD(nvmlDeviceGetName)
  LOAD(nvmlDeviceGetUUID)
  LOAD(nvmlDeviceGetMemoryInfo)
  LOAD(nvmlDeviceGetMigMode)
  const double t1 = now_us();
  nvmlReturn_t rc = nvmlInit_v2();
  if (rc != 0) {
    fprintf(stderr, "nvml_init_cost: nvmlInit_v2 returned %d\n", rc);
    return 2;
  }
  const double t2 = now_us();
  unsigned count = 0, failures = 0;
  // Each call's time summed over the GPUs: which of them the read phase is made of.
  double handle_us = 0, name_us = 0, uuid_us = 0, memory_us = 0, mig_us = 0;
  if (nvmlDeviceGetCount_v2(&count) != 0) ++failures;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = 0;
    char name[96], uuid[96];
    nvmlMemory_t mem;
    unsigned current = 0, pending = 0;
    double a = now_us();
    if (nvmlDeviceGetHandleByIndex_v2(i, &dev) != 0) {
      ++failures;
      continue;
    }
    double b = now_us();
    handle_us += b - a;
    failures += nvmlDeviceGetName(dev, name, sizeof name) != 0;
    a = now_us();
    name_us += a - b;
    failures += nvmlDeviceGetUUID(dev, uuid, sizeof uuid) != 0;
    b = now_us();
    uuid_us += b - a;
    failures += nvmlDeviceGetMemoryInfo(dev, &mem) != 0;
    a = now_us();
    memory_us += a - b;
    (void)nvmlDeviceGetMigMode(dev, &current, &pending);  // NOT_SUPPORTED is an answer too
    mig_us += now_us() - a;
  }
  const double t3 = now_us();
  rc = nvmlShutdown();
  const double t4 = now_us();
  struct rusage self;
  getrusage(RUSAGE_SELF, &self);
  const double cpu_us = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1e6 +
                        (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
  printf(
      "load_us %.0f init_us %.0f read_us %.0f shutdown_us %.0f total_us %.0f cpu_us %.0f handle_us %.0f "
      "name_us %.0f uuid_us %.0f memory_us %.0f mig_mode_us %.0f gpus %u failures %u\n",
      t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, cpu_us, handle_us, name_us, uuid_us, memory_us, mig_us, count,
      failures + (rc != 0));
  return 0;
}
