// The node ledger loader (vgpu/ledger_json.h): ledger.json and history.jsonl records as
// LedgerStore reads them back after a crash, an upgrade or a hand edit. Properties: an accepted
// ledger passes validate(), and serialize -> parse gives the same ledger (and the same text).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/ledger/ledger_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto ledger = vgpu::parse_ledger(text); ledger) {
    FUZZ_CHECK(vgpu::validate(*ledger).has_value());
    FUZZ_CHECK(ledger->new_history.empty());
    const std::string written = vgpu::serialize_ledger(*ledger);
    auto again = vgpu::parse_ledger(written);
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(*again == *ledger);
    FUZZ_CHECK(vgpu::serialize_ledger(*again) == written);
  } else {
    FUZZ_CHECK(ledger.error().code == vgpu::ErrorCode::corrupt);
    FUZZ_CHECK(!ledger.error().message.empty());
  }

  // history.jsonl is read line by line; each line is one record.
  if (auto record = vgpu::parse_history_record(text); record) {
    FUZZ_CHECK(record->end_time >= record->start_time);
    const std::string line = vgpu::serialize_history_record(*record);
    FUZZ_CHECK(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1);
    auto again = vgpu::parse_history_record(line.substr(0, line.size() - 1));
    FUZZ_CHECK(again.has_value() && *again == *record);
  } else {
    FUZZ_CHECK(record.error().code == vgpu::ErrorCode::corrupt);
  }
  return 0;
}
