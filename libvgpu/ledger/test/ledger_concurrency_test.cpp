// Several writers doing read-modify-write through the lock never lose an update, whether they are
// processes (prolog, epilog, planner) or threads in one process.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sample_ledger.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpu {
namespace {

using testing::sample_ledger;
using testing::ScratchDir;

constexpr int kWriters = 4;
constexpr int kIncrementsEach = 25;

Result<void> increment(Ledger& l) {
  ++l.plan.generation;
  return {};
}

TEST(LedgerConcurrency, ForkedWritersNeverLoseAnIncrement) {
  ScratchDir scratch;
  LedgerStore setup(scratch.ledger_dir());
  ASSERT_TRUE(setup.replace(sample_ledger()));
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      LedgerStore store(scratch.ledger_dir());
      int failures = 0;
      for (int i = 0; i < kIncrementsEach; ++i) {
        if (!store.update(increment)) ++failures;
        if (!store.load()) ++failures;  // readers in between never see a torn file
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  auto l = setup.load();
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->plan.generation, sample_ledger().plan.generation + kWriters * kIncrementsEach);
}

TEST(LedgerConcurrency, ThreadsNeverLoseAnIncrement) {
  ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  ASSERT_TRUE(store.replace(sample_ledger()));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrementsEach; ++i) {
        if (!store.update(increment)) ++failures;  // one store shared: each call locks anew
        if (!store.load()) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store.load()->plan.generation, sample_ledger().plan.generation + kWriters * kIncrementsEach);
}

TEST(LedgerConcurrency, CompetingClaimsNeverHandOutASlotTwice) {
  ScratchDir scratch;
  LedgerStore setup(scratch.ledger_dir());
  Ledger l = sample_ledger();
  l.plan.slots = {{0, "1g.10gb", {5, 1}, std::nullopt}, {0, "1g.10gb", {6, 1}, std::nullopt}};
  ASSERT_TRUE(setup.replace(l));
  // Four jobs race for two slots: exactly two win, the others get no_capacity.
  std::vector<pid_t> children;
  for (JobId job = 100; job < 104; ++job) {
    pid_t pid = ::fork();
    if (pid == 0) {
      LedgerStore store(scratch.ledger_dir());
      auto r = store.update([&](Ledger& x) { return claim_slots(x, job, "1g.10gb", 1); });
      ::_exit(r ? 0 : (r.error().code == ErrorCode::no_capacity ? 2 : 1));
    }
    children.push_back(pid);
  }
  int winners = 0, losers = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 0) ++winners;
    if (WEXITSTATUS(status) == 2) ++losers;
  }
  EXPECT_EQ(winners, 2);
  EXPECT_EQ(losers, 2);
  auto after = setup.load();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->plan.slots[0].claimed_by_job);
  EXPECT_TRUE(after->plan.slots[1].claimed_by_job);
  EXPECT_NE(after->plan.slots[0].claimed_by_job, after->plan.slots[1].claimed_by_job);
}

}  // namespace
}  // namespace vgpu
