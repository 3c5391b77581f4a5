// Test scaffolding: points the production NVML backend at the fake library with a fixture and a
// fresh state file, and runs the helper/probe binaries as separate processes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace vgpu::test {

inline std::string fixture(const std::string& name) { return std::string(VGPU_FAKE_NVML_FIXTURES) + "/" + name; }

struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs `cmd` through the shell with this process's environment; stdout is captured.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) r.out += buf.data();
  r.status = ::pclose(p);
  return r;
}

class FakeNvml : public ::testing::Test {
 protected:
  void use_fixture(const std::string& name) { ::setenv("VGPU_FAKE_NVML_FIXTURE", fixture(name).c_str(), 1); }

  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-nvml-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = dir_ + "/state.json";
    ::setenv("VGPU_NVML_LIBRARY", VGPU_FAKE_NVML_PATH, 1);
    ::setenv("VGPU_FAKE_NVML_STATE", state_.c_str(), 1);
    use_fixture("h100-80gb-1gpu.json");
  }

  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  CommandResult helper(const std::string& args) {
    return run_command(std::string(VGPU_NVML_TEST_HELPER) + " " + args + " 2>&1");
  }

  std::string dir_, state_;
};

}  // namespace vgpu::test
