// How vgpuctl reads Slurm: the stdout of one of its commands, or an admin's capture of it.
#pragma once

#include <optional>
#include <string>

namespace vgpuctl {

// stdout of `command` (run by the shell), or nullopt with `why`. stderr is left to the terminal:
// scontrol and squeue say there why they cannot reach slurmctld.
std::optional<std::string> run(const std::string& command, std::string& why);
std::optional<std::string> read_file(const std::string& path, std::string& why);

}  // namespace vgpuctl
