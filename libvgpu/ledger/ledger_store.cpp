#include "vgpu/ledger/ledger_store.h"

#include "vgpu/contract/guarded_read.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <set>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>

#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/file_ops.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

// As every guarded read (contract/guarded_read.h): no symlink followed, no FIFO blocks the node.
const int kReadFlags = contract::guarded_open_flags();

std::int64_t system_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

std::string utc_stamp(std::int64_t t) {
  auto secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

// Others must not be able to write what root later trusts (instance ownership decides which job
// sees which GPU), so group/other write bits and foreign owners are refused, not repaired.
Result<void> check_trusted(const FileInfo& info, const std::string& path, bool want_directory) {
  if (want_directory ? !info.is_directory : !info.is_regular)
    return fail(ErrorCode::unavailable,
                fmt::format("refusing {}: not a {}", path, want_directory ? "directory" : "regular file"));
  if (info.owner != ::geteuid())
    return fail(ErrorCode::unavailable,
                fmt::format("refusing {}: owned by uid {}, not by uid {} that uses it", path, info.owner, ::geteuid()));
  if (info.mode & 022)
    return fail(ErrorCode::unavailable,
                fmt::format("refusing {}: mode {:04o} lets {} write it (want {:04o})", path, info.mode,
                            (info.mode & 002) ? "everyone" : "its group", want_directory ? 0700 : 0600));
  return {};
}

}  // namespace

// An flock held on ledger.lock; closing the descriptor releases it. The lock file itself is
// never deleted: a process blocked on a deleted lock file would lock a different inode.
class LedgerStore::Lock {
 public:
  explicit Lock(file_ops::File file) : file_(std::move(file)) {}

 private:
  file_ops::File file_;
};

struct LedgerStore::ParseCache {
  std::mutex mutex;
  std::string text;       // the bytes read
  Ledger ledger;          // parse_ledger(text)
  std::string canonical;  // serialize_ledger(ledger)
  bool valid = false;
};

LedgerStore::LedgerStore(std::string directory, LedgerStoreOptions options)
    : dir_(std::move(directory)),
      options_(std::move(options)),
      fs_(options_.fs ? options_.fs : &posix_file_system()),
      catalog_(options_.catalog ? options_.catalog : &Catalog::builtin()),
      cache_(std::make_unique<ParseCache>()) {
  while (dir_.size() > 1 && dir_.ends_with('/')) dir_.pop_back();
  if (!options_.now) options_.now = system_now;
}

LedgerStore::LedgerStore(LedgerStore&&) noexcept = default;
LedgerStore::~LedgerStore() = default;

Result<void> LedgerStore::check_directory() const {
  auto info = fs_->stat(dir_);
  if (!info && info.error() == ENOENT && options_.create_directory && !options_.read_only) {
    auto made = fs_->mkdir(dir_, 0700);
    if (!made && made.error() != EEXIST) return std::unexpected(file_ops::sys_error("mkdir", dir_, made.error()));
    info = fs_->stat(dir_);
  }
  if (!info) return std::unexpected(file_ops::sys_error("stat", dir_, info.error()));
  return check_trusted(*info, dir_, /*want_directory=*/true);
}

namespace {

// A contended lock is waited for in the kernel's queue (woken the moment the holder unlocks, not
// at the next poll), by a helper thread, so the wait can still end at a timeout without signals.
// The helper holds a dup of the caller's descriptor: flock belongs to the open file description,
// so the lock it takes is the caller's. A caller that gave up leaves the helper to close the dup,
// which releases whatever it got. The helper calls flock(2) directly: once it returns, the caller
// may be using the FileSystem seam again.
struct LockWaiter {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  bool abandoned = false;
  int error = 0;
};

// 0, or the errno of the blocking flock; ETIMEDOUT when `timeout` passed first.
int wait_for_flock(int fd, int operation, std::chrono::steady_clock::duration timeout) {
  const int wait_fd = ::dup(fd);
  if (wait_fd < 0) return errno;
  auto waiter = std::make_shared<LockWaiter>();
  try {
    std::thread([waiter, wait_fd, operation] {
      int rc;
      while ((rc = ::flock(wait_fd, operation)) != 0 && errno == EINTR) {
      }
      const int err = rc == 0 ? 0 : errno;
      std::lock_guard guard(waiter->mutex);
      if (!waiter->abandoned) {
        waiter->done = true;
        waiter->error = err;
        waiter->done_cv.notify_one();
      }
      ::close(wait_fd);  // the caller's descriptor keeps the lock; an abandoned one releases it
    }).detach();
  } catch (const std::system_error& e) {
    ::close(wait_fd);
    return e.code().value() ? e.code().value() : EAGAIN;
  }
  std::unique_lock guard(waiter->mutex);
  if (!waiter->done_cv.wait_for(guard, timeout, [&] { return waiter->done; })) {
    waiter->abandoned = true;
    return ETIMEDOUT;
  }
  return waiter->error;
}

}  // namespace

Result<LedgerStore::Lock> LedgerStore::lock(int operation) const {
  if (auto r = check_directory(); !r) return std::unexpected(r.error());
  const int create = options_.read_only ? 0 : O_CREAT;
  auto file = file_ops::open(*fs_, lock_path(), O_RDWR | create | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (!file) return std::unexpected(file.error());
  for (;;) {
    auto r = fs_->flock(file->fd(), operation | LOCK_NB);
    if (r) return Lock(std::move(*file));
    if (r.error() == EINTR) continue;
    if (r.error() != EWOULDBLOCK) return std::unexpected(file_ops::sys_error("flock", lock_path(), r.error()));
    break;
  }
  const int err = wait_for_flock(file->fd(), operation, options_.lock_timeout);
  if (err == 0) return Lock(std::move(*file));
  if (err == ETIMEDOUT)
    return fail(ErrorCode::unavailable, fmt::format("flock {}: still held by another process after {} ms (lock "
                                                    "timeout); is a prolog or epilog stuck?",
                                                    lock_path(), options_.lock_timeout.count()));
  return std::unexpected(file_ops::sys_error("flock", lock_path(), err));
}

std::string LedgerStore::set_aside(const std::string& why) const {
  if (options_.read_only) return fmt::format("{}; left in place (a check changes nothing)", why);
  std::string base = ledger_path() + ".corrupt-" + utc_stamp(options_.now());
  std::string target = base;
  // Never overwrite an earlier set-aside file: each one may be evidence.
  for (int n = 1; fs_->stat(target).has_value(); ++n) target = fmt::format("{}.{}", base, n);
  if (auto r = file_ops::rename(*fs_, ledger_path(), target); !r)
    return fmt::format("{}; could not set it aside: {}", why, r.error().message);
  return fmt::format("{}; kept aside as {}", why, target);
}

Result<Ledger> LedgerStore::read_locked(std::string* canonical) const {
  auto opened = file_ops::open_if_exists(*fs_, ledger_path(), kReadFlags);
  if (!opened) return std::unexpected(opened.error());
  if (!*opened)
    return fail(ErrorCode::not_found, fmt::format("{}: no ledger yet; rebuild it from the hardware", ledger_path()));
  auto& file = **opened;
  auto info = file.fstat();
  if (!info) return std::unexpected(info.error());
  if (auto r = check_trusted(*info, ledger_path(), false); !r) return std::unexpected(r.error());
  auto text = file.read_all(options_.max_ledger_bytes);
  if (!text) {
    if (text.error().code != ErrorCode::corrupt) return std::unexpected(text.error());
    return fail(ErrorCode::corrupt, set_aside(text.error().message));
  }
  (void)file.close();  // read-only: nothing to lose
  std::lock_guard guard(cache_->mutex);
  if (!cache_->valid || cache_->text != *text) {
    cache_->valid = false;
    auto ledger = parse_ledger(*text, *catalog_);
    if (!ledger)
      return fail(ErrorCode::corrupt, set_aside(fmt::format("{}: {}", ledger_path(), ledger.error().message)));
    cache_->canonical = serialize_ledger(*ledger);
    cache_->ledger = std::move(*ledger);
    cache_->text = std::move(*text);
    cache_->valid = true;
  }
  if (canonical) *canonical = cache_->canonical;
  return cache_->ledger;
}

Result<void> LedgerStore::remove_stale_temporaries() {
  // Under the exclusive lock no other writer is active, so any temporary is a dead writer's.
  auto names = fs_->list_dir(dir_);
  if (!names) return std::unexpected(file_ops::sys_error("opendir", dir_, names.error()));
  std::string prefix = contract::atomic_temp_prefix("ledger.json");
  for (const auto& name : *names)
    if (name.starts_with(prefix))
      if (auto r = file_ops::unlink(*fs_, dir_ + "/" + name); !r) return r;
  return {};
}

Result<void> LedgerStore::write_locked(const Ledger& ledger, Durability durability) {
  auto options = durability == Durability::power_cut ? contract::ReplaceOptions::durable_file(0600)
                                                     : contract::ReplaceOptions::rebuildable_file(0600);
  return contract::atomic_replace(*fs_, dir_, "ledger.json", serialize_ledger(ledger),
                                  options.with_crash_points("ledger.after_temp_write", "ledger.after_rename"));
}

Result<void> LedgerStore::append_history(const std::vector<HistoryRecord>& records) {
  if (records.empty()) return {};
  auto file = file_ops::open(*fs_, history_path(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (!file) return std::unexpected(file.error());
  auto info = file->fstat();
  if (!info) return std::unexpected(info.error());
  if (auto r = check_trusted(*info, history_path(), false); !r) return r;
  // A writer that died mid-append left a line without its newline; cut it off so the new
  // records start on a line of their own.
  if (info->size > 0) {
    auto last = file->read_byte_at(info->size - 1);
    if (!last) return std::unexpected(last.error());
    if (*last != '\n') {
      auto all = file->read_all(options_.max_history_bytes);
      if (!all) return std::unexpected(all.error());
      auto newline = all->rfind('\n');
      if (auto r = file->ftruncate(newline == std::string::npos ? 0 : newline + 1); !r) return r;
    }
  }
  std::string lines;
  for (const auto& record : records) lines += serialize_history_record(record);
  if (auto r = file->write_all(lines); !r) return r;
  if (auto r = file->fsync(); !r) return r;
  return file->close();
}

Result<Ledger> LedgerStore::load() const {
  auto held = lock(LOCK_SH);
  if (!held) return std::unexpected(held.error());
  return read_locked();
}

Result<Ledger> LedgerStore::update(const Mutator& mutate, Durability durability) {
  if (options_.read_only)
    return fail(ErrorCode::internal, fmt::format("{}: a read-only store is never written", ledger_path()));
  auto held = lock(LOCK_EX);
  if (!held) return std::unexpected(held.error());
  if (auto r = remove_stale_temporaries(); !r) return std::unexpected(r.error());
  std::string before;
  auto ledger = read_locked(&before);
  if (!ledger) return ledger;
  ledger->new_history.clear();
  if (auto r = mutate(*ledger); !r) return std::unexpected(r.error());
  if (auto r = validate(*ledger, *catalog_); !r)
    return fail(ErrorCode::conflict, fmt::format("{}: update refused, it would leave the ledger invalid: {}",
                                                 ledger_path(), r.error().message));
  // Most planner rounds change nothing: rewriting then costs two fsyncs and wakes every reader.
  if (ledger->new_history.empty() && serialize_ledger(*ledger) == before) return ledger;
  // History first: a crash after this and before the rename repeats the record on retry, which
  // history() folds away; the other order could lose it.
  if (auto r = append_history(ledger->new_history); !r) return std::unexpected(r.error());
  if (auto r = write_locked(*ledger, durability); !r) return std::unexpected(r.error());
  return ledger;
}

Result<void> LedgerStore::replace(const Ledger& ledger) {
  if (options_.read_only)
    return fail(ErrorCode::internal, fmt::format("{}: a read-only store is never written", ledger_path()));
  if (auto r = validate(ledger, *catalog_); !r)
    return fail(ErrorCode::invalid_argument,
                fmt::format("{}: refusing to write an invalid ledger: {}", ledger_path(), r.error().message));
  auto held = lock(LOCK_EX);
  if (!held) return std::unexpected(held.error());
  if (auto r = remove_stale_temporaries(); !r) return r;
  if (auto r = append_history(ledger.new_history); !r) return r;
  return write_locked(ledger, Durability::power_cut);
}

Result<std::vector<HistoryRecord>> LedgerStore::history() const {
  auto held = lock(LOCK_SH);
  if (!held) return std::unexpected(held.error());
  std::vector<HistoryRecord> records;
  auto opened = file_ops::open_if_exists(*fs_, history_path(), kReadFlags);
  if (!opened) return std::unexpected(opened.error());
  if (!*opened) return records;
  auto& file = **opened;
  auto info = file.fstat();
  if (!info) return std::unexpected(info.error());
  if (auto r = check_trusted(*info, history_path(), false); !r) return std::unexpected(r.error());
  auto text = file.read_all(options_.max_history_bytes);
  if (!text) return std::unexpected(text.error());
  std::set<std::tuple<JobId, std::string, std::int64_t>> seen;
  std::size_t line_number = 0;
  for (std::size_t pos = 0; pos < text->size();) {
    auto newline = text->find('\n', pos);
    if (newline == std::string::npos) break;  // torn tail of a dead writer: not a record
    ++line_number;
    auto record = parse_history_record(std::string_view(*text).substr(pos, newline - pos));
    if (!record)
      return fail(ErrorCode::corrupt, fmt::format("{}:{}: {}", history_path(), line_number, record.error().message));
    if (seen.insert({record->job, record->mig_uuid, record->start_time}).second) records.push_back(std::move(*record));
    pos = newline + 1;
  }
  return records;
}

}  // namespace vgpu
