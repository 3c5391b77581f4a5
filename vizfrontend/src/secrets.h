// Per-session secrets. Both come from getrandom(2), never from a seeded PRNG.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "vgpu/base/error.h"

namespace vgpu::viz {

// Fills `out` with random bytes; the seam tests replace to make output predictable.
using RandomSource = std::function<Result<void>(std::span<unsigned char> out)>;
RandomSource system_random();

// websockify token: 32 lower-case hex characters (128 bits). Hex keeps it safe in a URL,
// a file name and the token file's "token: host:port" syntax without escaping.
Result<std::string> make_token(const RandomSource& random);

// VNC password: 8 characters of [A-Za-z0-9]. The RFB VNC authentication scheme uses only the
// first 8 bytes of a password (DES key), so longer passwords would only pretend to be stronger.
Result<std::string> make_vnc_password(const RandomSource& random);

// A random RFC 4122 version-4 UUID, lower case.
Result<std::string> make_uuid(const RandomSource& random);

}  // namespace vgpu::viz
