// The ledger's on-disk format, version 1 (docs/ledger.md), and the history.jsonl record format.
// The parsers are strict: unknown or missing fields, wrong types, out-of-range values and
// duplicate keys are `corrupt` errors that name the field path and value; the caller prefixes
// the file name.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/core/catalog.h"
#include "vgpu/base/error.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu {

inline constexpr std::string_view kLedgerFormat = "slurm-vgpu-ledger";
// Version 2 (backed slots: a plan slot may stand where a released instance still is) and 3 (idle
// instances, kept at their slot for the next job) read older versions as is: those never have
// them. An older reader refuses a newer version by its number instead of misreading it.
// 4: classes; 5: share types among them; 6: adopted instances (found in use when the ledger was
// first made). Each written only when the node has some.
inline constexpr int kLedgerVersion = 6;
inline constexpr int kLedgerOldestReadableVersion = 1;
inline constexpr std::string_view kHistoryFormat = "slurm-vgpu-history";
inline constexpr int kHistoryVersion = 1;

// Pretty-printed JSON ending in a newline. `new_history` is not part of it.
std::string serialize_ledger(const Ledger& ledger);
// Parses and validate()s. Returns `corrupt` on anything but a well-formed version-1 ledger.
Result<Ledger> parse_ledger(std::string_view text, const Catalog& catalog = Catalog::builtin());

// One line of history.jsonl, newline included.
std::string serialize_history_record(const HistoryRecord& record);
Result<HistoryRecord> parse_history_record(std::string_view line);

}  // namespace vgpu
