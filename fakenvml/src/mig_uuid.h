// Deterministic MIG UUIDs: the same GPU, GI id, placement and CI id always give the same
// "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", so tests and separate processes agree on them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace fakenvml {

inline std::uint64_t fnv1a(const std::string& s, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

inline std::string mig_uuid(const std::string& gpu_uuid, unsigned gi, unsigned start, unsigned size, unsigned ci) {
  std::string key = gpu_uuid + "/gi" + std::to_string(gi) + "/" + std::to_string(start) + "+" + std::to_string(size) +
                    "/ci" + std::to_string(ci);
  std::uint64_t a = fnv1a(key, 0xcbf29ce484222325ULL), b = fnv1a(key, 0x84222325cbf29ce4ULL);
  char out[48];
  std::snprintf(out, sizeof out, "MIG-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return out;
}

}  // namespace fakenvml
