// Which processes hold a compute context on which GPU scope (a MIG GPU instance, or a whole GPU
// with MIG off). The real driver keeps contexts in the kernel for any user's process and drops one
// when its process exits. The fake keeps a file per process in a directory beside its state file
// that every user may write (sticky, as /tmp): a job's own process registers itself, where the
// state file is root's alone, and a process that no longer runs is no context.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fakenvml {

struct ContextScope {
  std::string gpu_uuid;
  std::optional<unsigned> gi;   // none: the whole GPU (MIG off)
  std::uint64_t gi_serial = 0;  // tells a re-created instance with the same id from the old one
  bool operator==(const ContextScope&) const = default;
};

struct Context {
  pid_t pid = 0;
  ContextScope scope;
};

class Contexts {
 public:
  // `dir` empty: kept in this process only (a state kept in memory).
  explicit Contexts(std::string dir) : dir_(std::move(dir)) {}
  // Makes the directory where it is missing, writable by every user: what root's nvmlInit does,
  // since a user's process may not create it beside the state file. False with `error`.
  bool prepare(std::string& error) const;
  // The calling process `pid` holds a context on `scope` from now on (one scope per process, as a
  // CUDA program that set its device). False with `error` when the record cannot be written.
  bool open(pid_t pid, const ContextScope& scope, std::string& error);
  // Every context whose process still runs.
  [[nodiscard]] std::vector<Context> live() const;
  // Whether a process that still runs holds one on exactly `scope`.
  [[nodiscard]] bool held(const ContextScope& scope) const;

 private:
  std::string dir_;
  std::vector<Context> memory_;
};

// The directory beside a state file, hidden so that what lists that directory (a state directory
// of node folders) passes over it: "<dir>/.<state file>.contexts".
std::string contexts_dir_for(const std::string& state_path);

}  // namespace fakenvml
