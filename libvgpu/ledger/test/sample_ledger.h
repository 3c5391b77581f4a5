// Shared fixtures for the ledger tests: a ledger that uses every field, and a scratch directory.
#pragma once

#include <string>

#include "vgpu/ledger/ledger.h"

namespace vgpu::testing {

// Two GPUs (H100-80GB, A100-40GB); an owned, an idle and an orphaned instance; a viz VM; a plan
// with one claimed and one free slot. Valid.
Ledger sample_ledger();

// The hardware view that agrees with sample_ledger().
HardwareView sample_hardware();

// A fresh mode-0700 directory under $TMPDIR, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  // The ledger directory inside it (not created: the store creates it).
  [[nodiscard]] std::string ledger_dir() const { return path_ + "/node"; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text, unsigned mode = 0600);

}  // namespace vgpu::testing
