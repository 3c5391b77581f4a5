// How long the fake's MIG reconfiguration calls take (VGPU_FAKE_NVML_LATENCY_MS). A real GPU
// needs time to create and destroy instances; the fake answers at once unless told otherwise, so
// tests stay fast and benchmarks can show what real latency does to a job's start.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fakenvml {

struct Latency {
  unsigned gi_create_ms = 0;
  unsigned ci_create_ms = 0;
  unsigned ci_destroy_ms = 0;
  unsigned gi_destroy_ms = 0;
};

// "" -> no latency; "h100" -> the preset docs/backends.md explains; otherwise a list like
// "gi_create=1200,ci_create=300,ci_destroy=100,gi_destroy=400" (any subset, milliseconds,
// each at most 60000). nullopt with `error` naming the bad item.
std::optional<Latency> parse_latency(std::string_view text, std::string& error);

}  // namespace fakenvml
