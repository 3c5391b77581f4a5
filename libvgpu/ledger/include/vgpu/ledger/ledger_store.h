// The ledger file of one node: <dir>/ledger.json, guarded by an flock on <dir>/ledger.lock, with
// the accounting history appended to <dir>/history.jsonl. Prolog, epilog and the planner are
// separate processes that each read-modify-write it, so every change goes through update():
// exclusive lock, load, mutate, write a temporary file, rename over ledger.json (with fsyncs of the
// file and the directory where the write must survive a power cut), unlock. A reader therefore sees
// the previous or the next ledger, never a mix, even if a writer dies at any instant.
// docs/ledger.md has the full argument and the permission rules.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/base/error.h"
#include "vgpu/contract/file_system.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu {

struct LedgerStoreOptions {
  // How long load()/update() wait for another process's lock before giving up with `unavailable`.
  std::chrono::milliseconds lock_timeout{30'000};
  FileSystem* fs = nullptr;          // null: posix_file_system()
  const Catalog* catalog = nullptr;  // null: Catalog::builtin()
  std::uint64_t max_ledger_bytes = 16u << 20;
  std::uint64_t max_history_bytes = 1u << 30;
  bool create_directory = true;  // mkdir <dir> 0700 if missing (its parent must exist)
  // A check command's store (vgpu-planner --verify): a ledger it cannot read is reported, never set
  // aside for a rebuild; nothing is created (no directory, no lock file) and update() refuses.
  bool read_only = false;
  // Clock for the name of a set-aside corrupt file; tests pin it.
  std::function<std::int64_t()> now = nullptr;  // null: the system clock, Unix seconds
};

// What a ledger write must survive. Every write survives its writer's death (the rename is
// atomic and the page cache keeps it); a power_cut write also fsyncs the file and the directory.
// A job's own writes (a hook's claim, its instances, their release) need not: a power cut takes the
// instances and the job with it, and the rebooted node converges from the hardware and Slurm's job
// list whichever version survived (docs/ledger.md, "Writes per job"). History appends are always
// fsynced: they are the accounting.
enum class Durability { process_crash, power_cut };

class LedgerStore {
 public:
  explicit LedgerStore(std::string directory, LedgerStoreOptions options = {});
  LedgerStore(LedgerStore&&) noexcept;
  ~LedgerStore();

  [[nodiscard]] const std::string& directory() const { return dir_; }
  [[nodiscard]] std::string ledger_path() const { return dir_ + "/ledger.json"; }
  [[nodiscard]] std::string lock_path() const { return dir_ + "/ledger.lock"; }
  [[nodiscard]] std::string history_path() const { return dir_ + "/history.jsonl"; }

  // The current ledger, read under a shared lock.
  //   not_found:   there is no ledger yet (or it was set aside); rebuild with replace().
  //   corrupt:     it failed to parse; it has been renamed to ledger.json.corrupt-<UTC time>
  //                (named in the message) and the next load() reports not_found.
  //   unavailable: lock timeout, or the file/directory is writable by someone else.
  //   io:          a syscall failed; the message names it, the path and errno.
  [[nodiscard]] Result<Ledger> load() const;

  // Read-modify-write under the exclusive lock. The mutator's error, or any failure before the
  // rename, leaves ledger.json exactly as it was. Records the mutator adds to new_history are
  // appended to history.jsonl first. Returns the ledger as committed. The mutator must not throw.
  using Mutator = std::function<Result<void>(Ledger&)>;
  Result<Ledger> update(const Mutator& mutate, Durability durability = Durability::power_cut);

  // Writes `ledger` whatever is there now (first start, or rebuild after corruption).
  Result<void> replace(const Ledger& ledger);

  // Every history record, oldest first. A torn last line (a writer died mid-append) is ignored;
  // a record written twice (a writer died between the append and the ledger rename, then the
  // epilog ran again) is returned once, keyed by job, MIG uuid and start time.
  [[nodiscard]] Result<std::vector<HistoryRecord>> history() const;

 private:
  class Lock;
  Result<Lock> lock(int operation) const;
  Result<void> check_directory() const;
  // `canonical`, when given, receives serialize_ledger() of the result.
  Result<Ledger> read_locked(std::string* canonical = nullptr) const;
  Result<void> write_locked(const Ledger& ledger, Durability durability);
  Result<void> append_history(const std::vector<HistoryRecord>& records);
  Result<void> remove_stale_temporaries();
  std::string set_aside(const std::string& why) const;

  std::string dir_;
  LedgerStoreOptions options_;
  FileSystem* fs_;
  const Catalog* catalog_;
  // The last ledger this store parsed, with the bytes it came from: a read that finds the same
  // bytes skips the parse. The planner serving hooks loads an unchanged ledger many times over;
  // comparing the bytes (not a stat) cannot mistake a new file for the old one.
  struct ParseCache;
  std::unique_ptr<ParseCache> cache_;
};

}  // namespace vgpu
