// Viz sessions owned by Slurm jobs. The privileged half runs on the node side: the prolog runs
// `vgpu-viz start --owner USER --guard`, which starts the VM, writes the job's access file
// (<access_dir>/<job>, 0600, owned by the job's user) and leaves a small root "guard" that rotates
// the display password after the first login and serves image/geometry requests. The user's step
// (`srun ... vgpu-viz`) needs no libvirt rights: it prints the access file, follows its changes
// and ends when the user quits or the session is gone. The epilog's `vgpu-viz stop` ends it all.
#pragma once

#include <cstdint>

#include "context.h"

namespace vgpu::viz::tool {

// `<access file>.request`: what the user's step asks the guard for ("image=NAME geometry=WxH").
std::string request_path(const std::string& access_file);
// Starts the guard for `job` as a detached process (its own session, output to the state dir).
Result<void> spawn_guard(const Options& o, const VizConfig& config, std::uint32_t job);
// The guard itself (`vgpu-viz guard --job N --owner U`); exits when the session's domain is gone.
int cmd_guard(const Options& o);
// The user's step when the job has a Slurm session; not_found when it has none on this node.
Result<int> attach_to_session(const Options& o, const VizConfig& config, std::uint32_t job);

}  // namespace vgpu::viz::tool
