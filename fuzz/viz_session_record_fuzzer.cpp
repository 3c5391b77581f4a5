// The per-job session record (vizfrontend/src/session_record.h, state_dir/sessions/<job>.json)
// that stop and reap read back, possibly after a crash left it half-written or an older
// version wrote it. Property: parse -> to_json -> parse gives the same record.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "session_record.h"
#include "validate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace viz = vgpu::viz;

  auto record = viz::parse_session_record(text, "sessions/fuzz.json");
  if (!record) {
    FUZZ_CHECK(record.error().message.starts_with("sessions/fuzz.json"));
    return 0;
  }
  FUZZ_CHECK(record->job_id != 0);
  FUZZ_CHECK(record->domain == viz::domain_name(record->job_id));
  FUZZ_CHECK(record->phase == "starting" || record->phase == "running");
  const std::string written = viz::to_json(*record);
  auto again = viz::parse_session_record(written, "again");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *record);
  FUZZ_CHECK(viz::to_json(*again) == written);
  return 0;
}
