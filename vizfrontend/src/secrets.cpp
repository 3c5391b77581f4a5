#include "secrets.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace vgpu::viz {

RandomSource system_random() {
  return [](std::span<unsigned char> out) -> Result<void> {
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = getrandom(out.data() + done, out.size() - done, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail(ErrorCode::io, fmt::format("getrandom: {}", std::strerror(errno)));
      }
      done += static_cast<std::size_t>(n);
    }
    return {};
  };
}

Result<std::string> make_token(const RandomSource& random) {
  std::array<unsigned char, 16> bytes{};
  if (auto ok = random(bytes); !ok) return std::unexpected(ok.error().within("websockify token"));
  std::string out;
  for (const unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

Result<std::string> make_vnc_password(const RandomSource& random) {
  static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 62).
  while (out.size() < 8) {
    std::array<unsigned char, 16> bytes{};
    if (auto ok = random(bytes); !ok) return std::unexpected(ok.error().within("VNC password"));
    for (const unsigned char b : bytes) {
      if (b < 248 && out.size() < 8) out += alphabet[b % alphabet.size()];
    }
  }
  return out;
}

Result<std::string> make_uuid(const RandomSource& random) {
  std::array<unsigned char, 16> b{};
  if (auto ok = random(b); !ok) return std::unexpected(ok.error().within("UUID"));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string hex;
  for (const unsigned char c : b) hex += fmt::format("{:02x}", c);
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4), hex.substr(16, 4),
                     hex.substr(20));
}

}  // namespace vgpu::viz
