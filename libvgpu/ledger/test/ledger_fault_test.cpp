// Atomic replace under injected syscall failures and simulated crashes: after any of them the
// ledger on disk is the previous or the new one, whole and loadable, never a mix.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "fault_file_system.h"
#include "sample_ledger.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpu {
namespace {

using testing::Fault;
using testing::FaultFileSystem;
using testing::kCrashExitCode;
using testing::Op;
using testing::read_file;
using testing::sample_ledger;
using testing::ScratchDir;

// The change every test tries to commit: claim the free slot and retire job 42.
Result<void> the_change(Ledger& l) {
  retire_job(l, 42, 1'700'009'000, "completed");
  return claim_slots(l, 77, "1g.10gb", 1);
}

Ledger changed_ledger() {
  Ledger l = sample_ledger();
  (void)the_change(l);
  l.new_history.clear();
  return l;
}

struct Fixture {
  ScratchDir scratch;
  FaultFileSystem faults;
  LedgerStore store{scratch.ledger_dir(), LedgerStoreOptions{.fs = &faults}};
  LedgerStore plain{scratch.ledger_dir()};

  Fixture() { EXPECT_TRUE(plain.replace(sample_ledger())); }
  // The ledger on disk, read through the real filesystem.
  Ledger on_disk() {
    auto l = plain.load();
    EXPECT_TRUE(l) << l.error().message;
    return l ? *l : Ledger{};
  }
  bool temporaries_left() {
    for (const auto& e : std::filesystem::directory_iterator(scratch.ledger_dir()))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
    return false;
  }
};

int syscalls_in_one_update(Durability durability = Durability::power_cut) {
  Fixture f;
  EXPECT_TRUE(f.store.update(the_change, durability));
  return static_cast<int>(f.faults.calls().size());
}

std::vector<std::string> fsyncs_of(const FaultFileSystem& faults) {
  std::vector<std::string> out;
  for (const auto& call : faults.calls())
    if (call.starts_with("fsync ")) out.push_back(call.substr(6));
  return out;
}

TEST(LedgerFaults, NoSpaceWhileWritingKeepsTheOldLedgerAndNamesTheSyscall) {
  Fixture f;
  f.faults.add({.op = Op::write, .path_contains = "ledger.json.tmp.", .error = ENOSPC});
  auto r = f.store.update(the_change);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io);
  std::string temp = f.store.ledger_path() + ".tmp." + std::to_string(::getpid());
  EXPECT_NE(r.error().message.find(f.store.ledger_path() + " not changed: write " + temp +
                                   ": No space left on device (errno 28)"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(f.on_disk(), sample_ledger());
  EXPECT_FALSE(f.temporaries_left());
}

TEST(LedgerFaults, FsyncErrorBeforeRenameKeepsTheOldLedger) {
  Fixture f;
  f.faults.add({.op = Op::fsync, .path_contains = ".tmp.", .error = EIO});
  auto r = f.store.update(the_change);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("fsync "), std::string::npos);
  EXPECT_NE(r.error().message.find("Input/output error"), std::string::npos) << r.error().message;
  EXPECT_EQ(f.on_disk(), sample_ledger());
}

TEST(LedgerFaults, RenameFailureKeepsTheOldLedger) {
  Fixture f;
  f.faults.add({.op = Op::rename, .error = EROFS});
  auto r = f.store.update(the_change);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("rename "), std::string::npos);
  EXPECT_NE(r.error().message.find("Read-only file system"), std::string::npos);
  EXPECT_EQ(f.on_disk(), sample_ledger());
  EXPECT_FALSE(f.temporaries_left());
}

TEST(LedgerFaults, DirectoryFsyncFailureReportsThatTheNewLedgerIsInPlace) {
  Fixture f;
  f.faults.add({.op = Op::fsync, .path_contains = "", .nth = 3, .error = EIO});  // history, tmp, dir
  auto r = f.store.update(the_change);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(f.store.ledger_path() + " replaced but may not survive a power loss: fsync " +
                                   f.scratch.ledger_dir() + ": Input/output error"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(f.on_disk(), changed_ledger());
}

TEST(LedgerFaults, InterruptedSyscallsAreRetried) {
  Fixture f;
  for (Op op : {Op::open, Op::read, Op::write, Op::fsync, Op::flock, Op::rename, Op::fstat, Op::pread})
    f.faults.add({.op = op, .times = 3, .error = EINTR});
  auto r = f.store.update(the_change);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(f.on_disk(), changed_ledger());
}

TEST(LedgerFaults, ShortWritesAreContinued) {
  Fixture f;
  f.faults.add({.op = Op::write, .times = 100000, .short_write = 7});
  auto r = f.store.update(the_change);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(f.on_disk(), changed_ledger());
  EXPECT_EQ(f.plain.history()->size(), 1u);
}

TEST(LedgerFaults, ZeroByteWriteIsAnErrorNotAnEndlessLoop) {
  Fixture f;
  f.faults.add({.op = Op::write, .path_contains = ".tmp.", .times = 100000, .short_write = 0});
  auto r = f.store.update(the_change);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("No space left on device"), std::string::npos);
  EXPECT_EQ(f.on_disk(), sample_ledger());
}

TEST(LedgerFaults, AFailureAtAnySyscallLeavesTheOldOrTheNewLedger) {
  int total = syscalls_in_one_update();
  ASSERT_GT(total, 10);
  for (int k = 1; k <= total; ++k) {
    for (int err : {EIO, ENOSPC}) {
      Fixture f;
      f.faults.add({.nth = k, .error = err});
      auto r = f.store.update(the_change);
      Ledger now = f.on_disk();
      if (r) {
        EXPECT_EQ(now, changed_ledger()) << "call " << k << ": " << f.faults.calls()[k - 1];
        continue;
      }
      EXPECT_TRUE(now == sample_ledger() || now == changed_ledger()) << "call " << k << ": " << f.faults.calls()[k - 1];
      EXPECT_NE(r.error().message.find(std::strerror(err)), std::string::npos)
          << "call " << k << ": " << r.error().message;
      // A failed update can simply be run again.
      f.faults.clear();
      ASSERT_TRUE(f.store.update([&](Ledger& l) -> Result<void> {
        return now == sample_ledger() ? the_change(l) : Result<void>{};
      })) << "retry after call "
          << k;
      EXPECT_EQ(f.on_disk(), changed_ledger());
      EXPECT_EQ(f.plain.history()->size(), 1u) << "call " << k;
    }
  }
}

// A job's own write is not fsynced (a power cut takes the job and its instances); its history
// record still is, and a write that must survive a power cut fsyncs the file and the directory.
TEST(LedgerFaults, AJobsOwnWriteFsyncsOnlyTheHistory) {
  Fixture job;
  ASSERT_TRUE(job.store.update(the_change, Durability::process_crash));
  EXPECT_EQ(fsyncs_of(job.faults), std::vector<std::string>{job.store.history_path()});
  EXPECT_EQ(job.on_disk(), changed_ledger());

  Fixture durable;
  ASSERT_TRUE(durable.store.update(the_change, Durability::power_cut));
  auto fsyncs = fsyncs_of(durable.faults);
  ASSERT_EQ(fsyncs.size(), 3u);
  EXPECT_EQ(fsyncs[0], durable.store.history_path());
  EXPECT_NE(fsyncs[1].find("ledger.json.tmp."), std::string::npos) << fsyncs[1];
  EXPECT_EQ(fsyncs[2], durable.scratch.ledger_dir());
}

// Runs the update in a child process that dies at `fault`; returns its exit status.
int crash_child(Fixture& f, const Fault& fault, Durability durability = Durability::power_cut) {
  pid_t pid = ::fork();
  if (pid == 0) {
    f.faults.add(fault);
    auto r = f.store.update(the_change, durability);
    ::_exit(r ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Without its fsyncs a write still survives its writer's death at any point.
TEST(LedgerFaults, ACrashAtAnySyscallLeavesTheOldOrTheNewLedger) {
  for (auto durability : {Durability::power_cut, Durability::process_crash}) {
    SCOPED_TRACE(durability == Durability::power_cut ? "power_cut" : "process_crash");
    int total = syscalls_in_one_update(durability);
    for (int k = 1; k <= total; ++k) {
      Fixture f;
      int status = crash_child(f, {.nth = k, .crash = true}, durability);
      EXPECT_EQ(status, kCrashExitCode) << "call " << k;
      Ledger now = f.on_disk();
      EXPECT_TRUE(now == sample_ledger() || now == changed_ledger()) << "crash at call " << k;
      // Whoever runs next cleans up after the dead writer and succeeds.
      ASSERT_TRUE(f.plain.update([&](Ledger& l) -> Result<void> {
        return now == sample_ledger() ? the_change(l) : Result<void>{};
      })) << "after crash at call "
          << k;
      EXPECT_FALSE(f.temporaries_left()) << "call " << k;
      EXPECT_EQ(f.on_disk(), changed_ledger());
      auto h = f.plain.history();
      ASSERT_TRUE(h) << h.error().message;
      EXPECT_EQ(h->size(), 1u) << "crash at call " << k;
    }
  }
}

TEST(LedgerFaults, CrashHalfwayThroughWritingTheTemporaryKeepsTheOldLedger) {
  Fixture f;
  EXPECT_EQ(crash_child(f, {.op = Op::write, .path_contains = ".tmp.", .short_write = 40, .crash = true}),
            kCrashExitCode);
  EXPECT_EQ(f.on_disk(), sample_ledger());
  EXPECT_TRUE(f.temporaries_left());  // the evidence of the torn write is only the temporary
}

TEST(LedgerFaults, CrashBetweenWriteAndRenameKeepsTheOldLedger) {
  Fixture f;
  EXPECT_EQ(crash_child(f, {.op = Op::rename, .crash = true}), kCrashExitCode);
  EXPECT_EQ(f.on_disk(), sample_ledger());
}

TEST(LedgerFaults, CrashBetweenRenameAndDirectoryFsyncShowsTheNewLedger) {
  Fixture f;
  EXPECT_EQ(crash_child(f, {.op = Op::open, .path_contains = "", .nth = 5, .crash = true}),
            kCrashExitCode);  // opens: lock, ledger.json, history, tmp, then the directory
  EXPECT_EQ(f.on_disk(), changed_ledger());
}

TEST(LedgerFaults, CrashMidHistoryAppendKeepsTheOldLedgerAndHistoryReadable) {
  Fixture f;
  EXPECT_EQ(crash_child(f, {.op = Op::write, .path_contains = "history", .short_write = 30, .crash = true}),
            kCrashExitCode);
  EXPECT_EQ(f.on_disk(), sample_ledger());
  EXPECT_TRUE(f.plain.history()->empty());  // torn line ignored
  ASSERT_TRUE(f.plain.update(the_change));
  EXPECT_EQ(f.plain.history()->size(), 1u);
}

}  // namespace
}  // namespace vgpu
