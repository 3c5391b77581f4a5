// Error values that carry their context outward, so a message reads like
// "vgpu: prolog: job 42: profile 9g.99gb: unknown profile on H100-80GB".
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace vgpu {

enum class ErrorCode {
  invalid_argument,  // bad input from a user or admin (gres string, policy value)
  not_found,         // unknown profile, model, GPU, job
  conflict,          // placement overlaps, instance in use, already exists
  no_capacity,       // does not fit
  corrupt,           // on-disk state failed to parse or validate
  io,                // a syscall failed
  unavailable,       // a dependency (driver, daemon) is absent
  internal,
};

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;

  // Prefixes context: Error{..,"unknown profile"}.within("profile 9g.99gb") -> "profile 9g.99gb: unknown profile".
  [[nodiscard]] Error within(std::string_view context) const {
    return Error{code, std::string(context) + ": " + message};
  }
};

template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

// Adds context to the error of a Result, leaving a value untouched.
template <class T>
Result<T> within(Result<T> r, std::string_view context) {
  if (!r) return std::unexpected(r.error().within(context));
  return r;
}

std::string_view to_string(ErrorCode code);

}  // namespace vgpu
