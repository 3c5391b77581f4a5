#include "vgpu/base/error.h"

namespace vgpu {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::not_found: return "not found";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::no_capacity: return "no capacity";
    case ErrorCode::corrupt: return "corrupt";
    case ErrorCode::io: return "I/O error";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

}  // namespace vgpu
