#include "vgpu/ledger/ledger_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "sample_ledger.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::sample_ledger;
using testing::ScratchDir;
using testing::write_file;

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::ranges::sort(out);
  return out;
}

LedgerStoreOptions pinned_clock() {
  LedgerStoreOptions o;
  o.now = [] { return std::int64_t{1'795'000'000}; };  // 2026-11-18T11:06:40Z
  return o;
}

// A store whose lock waits at most `timeout`, over a replaced sample ledger.
LedgerStoreOptions waiting_at_most(std::chrono::milliseconds timeout) {
  LedgerStoreOptions o;
  o.lock_timeout = timeout;
  return o;
}

// Another open file description holding the store's lock with `operation`, as another process
// would; -1 when it could not.
int hold_lock(const LedgerStore& store, int operation) {
  int fd = ::open(store.lock_path().c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0 && ::flock(fd, operation) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(LedgerStore, LoadWithoutALedgerIsNotFound) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_NE(r.error().message.find(store.ledger_path()), std::string::npos);
}

TEST(LedgerStore, UpdateWithoutALedgerIsNotFoundAndWritesNothing) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  bool called = false;
  auto r = store.update([&](Ledger&) -> Result<void> {
    called = true;
    return {};
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_FALSE(called);
}

TEST(LedgerStore, ReplaceThenLoadRoundTripsWithPrivatePermissions) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  auto loaded = store.load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(*loaded, sample_ledger());
  EXPECT_EQ(mode_of(scratch.ledger_dir()), 0700u);
  EXPECT_EQ(mode_of(store.ledger_path()), 0600u);
  EXPECT_EQ(mode_of(store.lock_path()), 0600u);
  EXPECT_EQ(names_in(scratch.ledger_dir()), (std::vector<std::string>{"ledger.json", "ledger.lock"}));
}

TEST(LedgerStore, UpdateAppliesTheMutatorAndReturnsTheCommittedLedger) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  auto r = store.update([](Ledger& l) -> Result<void> { return claim_slots(l, 77, "1g.10gb", 1); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->plan.slots[1].claimed_by_job, 77u);
  EXPECT_EQ(*store.load(), *r);
}

ino_t inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

// A planner round that changes nothing must not cost two fsyncs: the file is not replaced.
TEST(LedgerStore, UpdateThatChangesNothingLeavesTheFileInPlace) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  const ino_t before = inode_of(store.ledger_path());
  auto r = store.update([](Ledger&) -> Result<void> { return {}; });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, sample_ledger());
  EXPECT_EQ(inode_of(store.ledger_path()), before) << "an unchanged ledger was rewritten";
  ASSERT_TRUE(store.update([](Ledger& l) -> Result<void> { return claim_slots(l, 77, "1g.10gb", 1); }));
  EXPECT_NE(inode_of(store.ledger_path()), before) << "a change was not written";
}

// A store parses the file once per change, not once per load: what it keeps must never hide
// another writer's change, even one that leaves the file the same size.
TEST(LedgerStore, ALoadSeesAnotherWritersChangeOfTheSameSize) {
  ScratchDir scratch;
  LedgerStore reader(scratch.ledger_dir());
  LedgerStore writer(scratch.ledger_dir());
  ASSERT_TRUE(writer.replace(sample_ledger()));
  ASSERT_TRUE(writer.update([](Ledger& l) -> Result<void> { return claim_slots(l, 77, "1g.10gb", 1); }));
  auto first = reader.load();
  ASSERT_TRUE(first) << first.error().message;
  const auto size_before = std::filesystem::file_size(reader.ledger_path());
  ASSERT_TRUE(writer.update([](Ledger& l) -> Result<void> {
    release_claims(l, 77);
    return claim_slots(l, 78, "1g.10gb", 1);
  }));
  ASSERT_EQ(std::filesystem::file_size(reader.ledger_path()), size_before);
  auto second = reader.load();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->plan.slots[1].claimed_by_job, 78u);
  EXPECT_EQ(*second, *writer.load());
}

TEST(LedgerStore, ChangingALoadedLedgerChangesNeitherTheFileNorTheNextLoad) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  auto loaded = store.load();
  ASSERT_TRUE(loaded);
  loaded->instances.clear();
  EXPECT_EQ(*store.load(), sample_ledger());
  auto failed = store.update([](Ledger& l) -> Result<void> {
    l.instances.clear();
    return fail(ErrorCode::conflict, "changed my mind");
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(*store.load(), sample_ledger());
}

TEST(LedgerStore, MutatorErrorLeavesTheFileByteForByteUntouched) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::string before = read_file(store.ledger_path());
  auto r = store.update([](Ledger& l) -> Result<void> {
    l.plan.generation = 99;
    return claim_slots(l, 77, "7g.80gb", 1);  // no such slot: fails after a change
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::no_capacity);
  EXPECT_EQ(read_file(store.ledger_path()), before);
}

TEST(LedgerStore, UpdateThatWouldBreakTheLedgerIsRefused) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::string before = read_file(store.ledger_path());
  auto r = store.update([](Ledger& l) -> Result<void> {
    l.instances[1].placement = {0, 1};  // on top of the 3g.40gb
    return {};
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_NE(r.error().message.find("instances[1].placement"), std::string::npos) << r.error().message;
  EXPECT_EQ(read_file(store.ledger_path()), before);
  Ledger invalid = sample_ledger();
  invalid.gpus.clear();
  EXPECT_EQ(store.replace(invalid).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(read_file(store.ledger_path()), before);
}

TEST(LedgerStore, CorruptLedgerIsSetAsideNamedAndNeverDeleted) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir(), pinned_clock());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::string torn = read_file(store.ledger_path()).substr(0, 100);
  write_file(store.ledger_path(), torn);
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  std::string aside = store.ledger_path() + ".corrupt-20261118T110640Z";
  EXPECT_NE(r.error().message.find(store.ledger_path() + ": not valid JSON"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("kept aside as " + aside), std::string::npos) << r.error().message;
  EXPECT_EQ(read_file(aside), torn);
  EXPECT_EQ(store.load().error().code, ErrorCode::not_found);

  // A second bad file in the same second does not overwrite the first piece of evidence.
  ASSERT_TRUE(store.replace(sample_ledger()));
  write_file(store.ledger_path(), "garbage");
  auto again = store.update([](Ledger&) -> Result<void> { return {}; });
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::corrupt);
  EXPECT_EQ(read_file(aside), torn);
  EXPECT_EQ(read_file(aside + ".1"), "garbage");

  // The caller's way out: rebuild from the hardware.
  auto rebuilt = rebuild_from_hardware("gpu-node-1", testing::sample_hardware(), 1);
  ASSERT_TRUE(rebuilt);
  ASSERT_TRUE(store.replace(*rebuilt));
  EXPECT_EQ(store.load()->instances.size(), 3u);
}

TEST(LedgerStore, SemanticallyInvalidLedgerIsCorruptWithTheFieldPath) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::string text = read_file(store.ledger_path());
  text.replace(text.find("\"7g.40gb\""), 9, "\"9g.99gb\"");
  write_file(store.ledger_path(), text);
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(store.ledger_path() + ": instances[2].profile: 9g.99gb: not a "
                                                         "profile of A100-40GB"),
            std::string::npos)
      << r.error().message;
}

TEST(LedgerStore, WorldWritableLedgerIsRefused) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  ASSERT_EQ(::chmod(store.ledger_path().c_str(), 0666), 0);
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("mode 0666 lets everyone write it"), std::string::npos) << r.error().message;
  EXPECT_FALSE(store.update([](Ledger&) -> Result<void> { return {}; }));
  EXPECT_TRUE(std::filesystem::exists(store.ledger_path()));  // refused, not set aside
}

TEST(LedgerStore, DirectoryWritableByOthersIsRefused) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  ASSERT_EQ(::chmod(scratch.ledger_dir().c_str(), 0770), 0);
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("refusing " + scratch.ledger_dir() + ": mode 0770 lets its group"),
            std::string::npos)
      << r.error().message;
}

TEST(LedgerStore, SymlinkedLedgerIsNotFollowed) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::string elsewhere = scratch.path() + "/elsewhere.json";
  std::filesystem::rename(store.ledger_path(), elsewhere);
  std::filesystem::create_symlink(elsewhere, store.ledger_path());
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io);
  EXPECT_NE(r.error().message.find("open " + store.ledger_path()), std::string::npos) << r.error().message;
}

// A FIFO at the ledger's path would block the reader in open(2): refused at once.
TEST(LedgerStore, AFifoAtTheLedgersPathIsRefusedWithoutBlocking) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::filesystem::remove(store.ledger_path());
  ASSERT_EQ(::mkfifo(store.ledger_path().c_str(), 0600), 0);
  auto r = store.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
}

// vgpu-planner --verify's store: a ledger it cannot read is reported and left where it is (a set
// aside file starts a rebuild that quarantines every idle instance), and nothing is written.
TEST(LedgerStore, AReadOnlyStoreReportsACorruptLedgerAndLeavesItInPlace) {
  ScratchDir scratch;
  LedgerStore writer(scratch.ledger_dir());
  ASSERT_TRUE(writer.replace(sample_ledger()));
  write_file(writer.ledger_path(), "garbage");
  LedgerStoreOptions options;
  options.read_only = true;
  LedgerStore checker(scratch.ledger_dir(), options);
  auto r = checker.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find("left in place (a check changes nothing)"), std::string::npos) << r.error().message;
  EXPECT_EQ(read_file(writer.ledger_path()), "garbage");
  for (const auto& entry : std::filesystem::directory_iterator(scratch.ledger_dir()))
    EXPECT_EQ(entry.path().filename().string().find(".corrupt-"), std::string::npos) << entry.path();
  EXPECT_FALSE(checker.update([](Ledger&) -> Result<void> { return {}; }));
  EXPECT_FALSE(checker.replace(sample_ledger()));
  EXPECT_EQ(read_file(writer.ledger_path()), "garbage");
}

TEST(LedgerStore, AReadOnlyStoreCreatesNothing) {
  ScratchDir scratch;
  LedgerStoreOptions options;
  options.read_only = true;
  LedgerStore checker(scratch.ledger_dir(), options);
  EXPECT_FALSE(checker.load());
  EXPECT_FALSE(std::filesystem::exists(scratch.ledger_dir()));
}

TEST(LedgerStore, LockWaitTimesOutWithAClearError) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir(), waiting_at_most(150ms));
  ASSERT_TRUE(store.replace(sample_ledger()));
  int held = hold_lock(store, LOCK_EX);
  ASSERT_GE(held, 0);
  auto start = std::chrono::steady_clock::now();
  auto r = store.load();
  auto waited = std::chrono::steady_clock::now() - start;
  ::close(held);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("flock " + store.lock_path() +
                                   ": still held by another "
                                   "process after 150 ms"),
            std::string::npos)
      << r.error().message;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 10s);     // bounded, not a hang; generous for a loaded sanitizer build
  EXPECT_TRUE(store.load());  // released: works again
}

// A contended lock is waited for, not refused: the writer gets it once the holder lets go.
TEST(LedgerStore, AWriterWaitsForTheHolderAndThenWrites) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir(), waiting_at_most(20s));
  ASSERT_TRUE(store.replace(sample_ledger()));
  int held = hold_lock(store, LOCK_EX);
  ASSERT_GE(held, 0);
  std::thread holder([held] {
    std::this_thread::sleep_for(100ms);
    ::close(held);
  });
  auto r = store.update([](Ledger& l) -> Result<void> { return claim_slots(l, 77, "1g.10gb", 1); });
  holder.join();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(store.load()->plan.slots[1].claimed_by_job, 77u);
}

// A writer that gave up leaves nothing locked behind once the holder is gone.
TEST(LedgerStore, AWriterThatTimedOutDoesNotKeepTheLock) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir(), waiting_at_most(100ms));
  ASSERT_TRUE(store.replace(sample_ledger()));
  int held = hold_lock(store, LOCK_EX);
  ASSERT_GE(held, 0);
  ASSERT_FALSE(store.update([](Ledger&) -> Result<void> { return {}; }));
  ::close(held);
  LedgerStore again(scratch.ledger_dir(), waiting_at_most(20s));
  auto r = again.update([](Ledger& l) -> Result<void> { return claim_slots(l, 78, "1g.10gb", 1); });
  ASSERT_TRUE(r) << r.error().message;
  int probe = ::open(again.lock_path().c_str(), O_RDWR | O_CLOEXEC);
  bool free_again = false;
  for (int i = 0; i < 200 && !free_again; ++i) {  // the abandoned waiter lets go right after it wins
    free_again = ::flock(probe, LOCK_EX | LOCK_NB) == 0;
    if (!free_again) std::this_thread::sleep_for(10ms);
  }
  ::close(probe);
  EXPECT_TRUE(free_again) << "the lock stayed held after every writer was done";
}

TEST(LedgerStore, ReadersShareTheLockButWritersWait) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir(), waiting_at_most(100ms));
  ASSERT_TRUE(store.replace(sample_ledger()));
  int reader = hold_lock(store, LOCK_SH);
  ASSERT_GE(reader, 0);
  EXPECT_TRUE(store.load());
  auto w = store.update([](Ledger&) -> Result<void> { return {}; });
  ::close(reader);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ErrorCode::unavailable);
}

TEST(LedgerStore, StaleTemporaryOfADeadWriterIsRemovedByTheNextUpdate) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  write_file(store.ledger_path() + ".tmp.999999", "{\"half\":");
  EXPECT_TRUE(store.load());  // readers ignore it
  ASSERT_TRUE(store.update([](Ledger&) -> Result<void> { return {}; }));
  EXPECT_FALSE(std::filesystem::exists(store.ledger_path() + ".tmp.999999"));
}

TEST(LedgerStore, RetiredJobsGoToTheAppendOnlyHistory) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  EXPECT_TRUE(store.history()->empty());
  ASSERT_TRUE(store.update([](Ledger& l) -> Result<void> {
    retire_job(l, 42, 1'700'009'000, "completed");
    return {};
  }));
  auto h = store.history();
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].job, 42u);
  EXPECT_EQ(mode_of(store.history_path()), 0600u);
  EXPECT_TRUE(store.load()->new_history.empty());

  // History survives the main file being lost.
  write_file(store.ledger_path(), "{");
  EXPECT_FALSE(store.load());
  EXPECT_EQ(store.history()->size(), 1u);
}

TEST(LedgerStore, HistoryIgnoresATornTailAndRepairsItOnTheNextAppend) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  Ledger l = sample_ledger();
  l.instances[1].job = 50;
  l.instances[1].user = "carol";
  ASSERT_TRUE(store.replace(l));
  ASSERT_TRUE(store.update([](Ledger& x) -> Result<void> {
    retire_job(x, 42, 1'700'009'000, "completed");
    return {};
  }));
  std::string good = read_file(store.history_path());
  write_file(store.history_path(), good + "{\"format\":\"slurm-vgpu-hist");  // died mid-append
  ASSERT_EQ(store.history()->size(), 1u);
  ASSERT_TRUE(store.update([](Ledger& x) -> Result<void> {
    retire_job(x, 50, 1'700'009'500, "cancelled");
    return {};
  }));
  auto h = store.history();
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[1].job, 50u);
  EXPECT_EQ((*h)[1].end_reason, "cancelled");
  EXPECT_EQ(read_file(store.history_path()).find("slurm-vgpu-hist\""), std::string::npos);
}

TEST(LedgerStore, HistoryFoldsARecordRepeatedByARetriedEpilog) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  ASSERT_TRUE(store.update([](Ledger& x) -> Result<void> {
    retire_job(x, 42, 1'700'009'000, "completed");
    return {};
  }));
  std::string line = read_file(store.history_path());
  HistoryRecord again = *parse_history_record(line.substr(0, line.size() - 1));
  again.end_time += 5;  // the retry saw a later clock
  write_file(store.history_path(), line + serialize_history_record(again));
  auto h = store.history();
  ASSERT_TRUE(h);
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].end_time, 1'700'009'000);
}

TEST(LedgerStore, CorruptHistoryLineIsReportedWithItsLineNumber) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  write_file(store.history_path(), "{}\n");
  auto h = store.history();
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::corrupt);
  EXPECT_NE(h.error().message.find(store.history_path() + ":1: format: required field missing"), std::string::npos)
      << h.error().message;
}

}  // namespace
}  // namespace vgpu
