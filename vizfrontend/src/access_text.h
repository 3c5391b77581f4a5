// The access file: what a session's user reads to connect (URL, ssh line, one-time password, the
// OnDemand websocket), written by root for the job's user and read back by the user's step. Its
// one owner, writer and reader side by side.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ood_connection.h"
#include "session_manager.h"

namespace vgpu::viz {

// `rotated`: the text after a password change.
std::string access_text(const StartedSession& s, bool rotated);
// What OnDemand needs, read back from that text; nullopt when the session has no OnDemand proxy.
std::optional<OodConnection> ood_connection_of(std::string_view access);

}  // namespace vgpu::viz
