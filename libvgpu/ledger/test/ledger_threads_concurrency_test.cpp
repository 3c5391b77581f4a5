// Threads of one process, each with its own LedgerStore on one directory (as the planner daemon
// and a prolog would be if they ever shared a process): every store opens ledger.lock anew, so
// flock serialises them like separate processes. No update and no history line may be lost, and
// readers never see a torn file. scripts/test-tsan.sh runs this under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sample_ledger.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpu {
namespace {

using testing::sample_ledger;
using testing::ScratchDir;

constexpr int kWriters = 4;
constexpr int kUpdatesEach = 20;

HistoryRecord record_for(JobId job) {
  return {job,
          "alice",
          0,
          "1g.10gb",
          {5, 1},
          "MIG-0a0a0a0a-0000-0000-0000-000000000009",
          static_cast<std::int64_t>(1'700'000'000 + job),
          static_cast<std::int64_t>(1'700'000'060 + job),
          "completed"};
}

TEST(LedgerThreadsConcurrency, SeparateStoresNeverLoseAnUpdateOrAHistoryLine) {
  ScratchDir scratch;
  ASSERT_TRUE(LedgerStore(scratch.ledger_dir()).replace(sample_ledger()));
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      LedgerStore store(scratch.ledger_dir());
      for (int i = 0; i < kUpdatesEach; ++i) {
        auto r = store.update([&](Ledger& l) -> Result<void> {
          ++l.plan.generation;
          l.new_history.push_back(record_for(static_cast<JobId>(1000 * (w + 1) + i)));
          return {};
        });
        if (!r) ++failures;
      }
    });
  // A reader with its own store loads ledger and history while the writers run.
  std::atomic<int> reads{0};
  std::thread reader([&] {
    LedgerStore store(scratch.ledger_dir());
    std::uint64_t last_generation = 0;
    while (writing.load()) {
      auto l = store.load();
      auto h = store.history();
      if (!l || !h || l->plan.generation < last_generation) ++failures;
      if (l) last_generation = l->plan.generation;
      ++reads;
      // Writers poll for the lock (LOCK_NB with back-off), so a reader that re-took its shared
      // lock back to back would starve them; real readers (prolog, vgpuctl) come and go.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (auto& t : threads) t.join();
  writing = false;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);

  LedgerStore check(scratch.ledger_dir());
  auto l = check.load();
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->plan.generation, sample_ledger().plan.generation + kWriters * kUpdatesEach);
  auto h = check.history();
  ASSERT_TRUE(h) << h.error().message;
  std::set<JobId> jobs;
  for (const auto& r : *h) jobs.insert(r.job);
  EXPECT_EQ(h->size(), static_cast<std::size_t>(kWriters * kUpdatesEach));
  EXPECT_EQ(jobs.size(), static_cast<std::size_t>(kWriters * kUpdatesEach));
}

TEST(LedgerThreadsConcurrency, SeparateStoresNeverHandOutASlotTwice) {
  ScratchDir scratch;
  Ledger start = sample_ledger();
  start.plan.slots = {{0, "1g.10gb", {5, 1}, std::nullopt}, {0, "1g.10gb", {6, 1}, std::nullopt}};
  ASSERT_TRUE(LedgerStore(scratch.ledger_dir()).replace(start));
  constexpr int kJobs = 6;
  std::vector<int> outcome(kJobs, -1);  // 0 won, 2 no capacity, 1 anything else
  std::vector<std::thread> threads;
  for (int j = 0; j < kJobs; ++j)
    threads.emplace_back([&, j] {
      LedgerStore store(scratch.ledger_dir());
      auto r = store.update([&](Ledger& x) { return claim_slots(x, static_cast<JobId>(100 + j), "1g.10gb", 1); });
      outcome[j] = r ? 0 : (r.error().code == ErrorCode::no_capacity ? 2 : 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 0), 2);
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 2), kJobs - 2);
  auto after = LedgerStore(scratch.ledger_dir()).load();
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_EQ(after->plan.slots.size(), 2u);
  ASSERT_TRUE(after->plan.slots[0].claimed_by_job && after->plan.slots[1].claimed_by_job);
  EXPECT_NE(*after->plan.slots[0].claimed_by_job, *after->plan.slots[1].claimed_by_job);
  for (const auto& s : after->plan.slots) EXPECT_EQ(outcome[*s.claimed_by_job - 100], 0);
}

}  // namespace
}  // namespace vgpu
