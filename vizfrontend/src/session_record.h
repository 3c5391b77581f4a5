// The per-job record of a running viz session (state_dir/sessions/<job>.json). It holds what
// teardown and reap need (domain, attached device, token file) and no secret: the VNC password
// and the websockify token value live only in libvirt and the 0600 token file.
#pragma once

#include <cstdint>
#include <string>

#include "gpu_attach.h"

namespace vgpu::viz {

struct SessionRecord {
  std::uint32_t job_id = 0;
  std::string domain;
  std::string pool;
  std::string user;
  std::string phase = "starting";  // "starting" until every step succeeded, then "running"
  Attachment attachment;
  int display_port = -1;
  std::uint16_t proxy_port = 0;
  std::int64_t created_unix = 0;
  friend bool operator==(const SessionRecord&, const SessionRecord&) = default;
};

std::string to_json(const SessionRecord& record);
// Strict: version must be 1, unknown keys and wrong types are errors naming `origin`.
Result<SessionRecord> parse_session_record(std::string_view text, std::string_view origin);

}  // namespace vgpu::viz
