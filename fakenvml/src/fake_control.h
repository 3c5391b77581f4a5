/* The fake NVML's own entry points, beside NVML's ABI: what tests use to play the workload.
 * Never present in the real library. */
#ifndef VGPU_FAKE_CONTROL_H
#define VGPU_FAKE_CONTROL_H

#include "nvml_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From now on `device` (a MIG device: its GPU instance; a GPU with MIG off: the whole GPU) runs
 * at these utilisations (0..100) and holds this much memory. INVALID_ARGUMENT for a value out of
 * range, memory beyond the scope's, or a bare GPU whose MIG mode is on. */
nvmlReturn_t vgpuFakeSetActivity(nvmlDevice_t device, double smPercent, double dramPercent,
                                 unsigned long long memoryUsedMiB);

/* The calling process holds a compute context on `device` (a MIG device, or a GPU with MIG off)
 * until it exits: NVML lists it among the device's running processes, and its compute instance
 * cannot be destroyed meanwhile. */
nvmlReturn_t vgpuFakeOpenComputeContext(nvmlDevice_t device);

#ifdef __cplusplus
}
#endif

#endif
