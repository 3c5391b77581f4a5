// The MIG-mode switch as the driver applies it, over the fake's shared state. Every rule names its
// source; docs/backends.md ("MIG mode") says which are documented and which are assumed.
#pragma once

#include "fixture.h"
#include "state.h"

namespace fakenvml {

// The mode now: what nvmlDeviceSetMigMode last left, else the fixture's.
MigModeState mig_mode_now(const State& s, const Gpu& gpu);
bool mig_enabled_now(const State& s, const Gpu& gpu);

// Whether activating a new mode needs a GPU reset: Ampere parts (A100, A30, A800). MIG user
// guide, "Deployment Considerations": "Setting MIG mode on the A100/A30 requires a GPU reset".
bool switch_needs_reset(const Gpu& gpu);

// nvmlDeviceSetMigMode: the return code, and in `activation` the activation status (nvml.h).
// - Only root may change it (nvml.h: "Requires root user"): NO_PERMISSION otherwise.
// - A GPU without MIG support: NOT_SUPPORTED; a mode other than DISABLE/ENABLE: INVALID_ARGUMENT.
// - The requested mode becomes the pending mode. It activates at once only when nothing holds the
//   GPU: no GPU instance (to disable) and no process on the whole GPU (to enable): none with a
//   compute context (vgpuFakeOpenComputeContext) and no workload's memory (vgpuFakeSetActivity,
//   as fake-nvml-load sets it). nvml.h: activation "would return NVML_ERROR_IN_USE" if the device
//   "isn't idle"; the mode stays pending.
// - On a part whose switch needs a reset the mode stays pending with RESET_REQUIRED (nvml.h, for
//   platforms where the reset is not exposed; the fake never resets a GPU, so a switch on A100 or
//   A30 never activates here, as on a node that forbids resets).
// `context_on_whole_gpu`: a process holds a compute context on the GPU (contexts.h).
nvmlReturn_t set_mig_mode(State& s, const Gpu& gpu, unsigned mode, bool root, nvmlReturn_t& activation,
                          bool context_on_whole_gpu = false);

}  // namespace fakenvml
