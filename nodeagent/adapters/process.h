// Runs a helper program (squeue, scontrol, vgpu-scrub) without a shell, with a deadline.
// Arguments go straight to execvp, so user-controlled strings can never become shell syntax.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu::agent {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or by the deadline
  bool timed_out = false;
  std::string out;
  std::string err;
};

struct CommandOptions {
  std::chrono::milliseconds timeout{10'000};
  std::map<std::string, std::string> set_env;  // added to (or replacing in) the inherited env
  std::size_t max_output = 8u << 20;           // bytes kept per stream
  std::string input;                           // written to its stdin (empty: stdin is /dev/null)
  // Its stdout and stderr go to /dev/null and only its exit is waited for: for a program that
  // leaves a daemon behind, which would otherwise hold the output pipes open.
  bool discard_output = false;
};

// An error only when the program could not be started; a non-zero exit is a CommandResult.
Result<CommandResult> run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

}  // namespace vgpu::agent
