#include "engine/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "tests/engine/backends.h"

namespace kakeya::engine {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.n_threads(), threads);
    for (size_t n : {0u, 1u, 3u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t task, int thread) {
        ASSERT_GE(thread, 0);
        ASSERT_LT(thread, threads);
        hits[task].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "task " << i;
    }
  }
}

TEST(ThreadPool, RangesCoverWithoutOverlap) {
  ThreadPool pool(3);
  for (size_t n : {1u, 7u, 100u, 12345u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_ranges(n, 5, [&](size_t a, size_t b, int) {
      ASSERT_LT(a, b);
      ASSERT_LE(b, n);
      for (size_t i = a; i < b; ++i) hits[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n " << n << " item " << i;
  }
}

// The guided split (thread_pool.h): each range is 1/n_threads() of what is left, rounded up and at
// least min_chunk, so the ranges in order shrink from ceil(n / n_threads()) to the last one, which
// holds what is left; one thread takes [0, n) whole.
TEST(ThreadPool, RangesShrinkFromAShareOfTheWholeToTheMinimum) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (size_t n : {1u, 9u, 1000u, 12345u}) {
      const size_t min_chunk = 5;
      std::mutex mu;
      std::vector<std::pair<size_t, size_t>> ranges;
      pool.parallel_ranges(n, min_chunk, [&](size_t a, size_t b, int) {
        std::lock_guard<std::mutex> lock(mu);
        ranges.emplace_back(a, b);
      });
      std::sort(ranges.begin(), ranges.end());
      ASSERT_FALSE(ranges.empty());
      size_t at = 0;
      for (size_t i = 0; i < ranges.size(); ++i) {
        const auto [a, b] = ranges[i];
        ASSERT_EQ(a, at) << "ranges must be consecutive";
        const size_t rest = n - a;
        EXPECT_EQ(b - a, std::min(rest, std::max(min_chunk, (rest + static_cast<size_t>(threads) - 1) /
                                                                 static_cast<size_t>(threads))))
            << threads << " threads, n " << n << ", range " << i;
        if (i > 0) {
          EXPECT_LE(b - a, ranges[i - 1].second - ranges[i - 1].first);
        }
        at = b;
      }
      EXPECT_EQ(at, n);
      if (threads == 1) {
        EXPECT_EQ(ranges.size(), 1u);
      }
    }
  }
}

TEST(ThreadPool, UsesSeveralThreadsAndReusesThem) {
  ThreadPool pool(4);
  std::set<std::thread::id> ids;
  std::mutex mu;
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> sum{0};
    pool.parallel_for(64, [&](size_t task, int) {
      // Enough work per task that workers get a share.
      volatile double acc = 0;
      for (int i = 0; i < 20000; ++i) acc = acc + i * 1e-9;
      sum.fetch_add(static_cast<int>(task));
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    ASSERT_EQ(sum.load(), 63 * 64 / 2);
  }
  EXPECT_GT(ids.size(), 1u);
  EXPECT_LE(ids.size(), 4u);
}

TEST(ThreadPool, NonPositiveThreadCountMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.n_threads(), 1);
  int count = 0;  // no worker threads: plain int is safe
  pool.parallel_for(10, [&](size_t, int thread) {
    EXPECT_EQ(thread, 0);
    ++count;
  });
  EXPECT_EQ(count, 10);
}


// Many tiny back-to-back jobs: the spin/block hand-off must never lose a wake-up or run a task
// twice, whether the workers catch a job while spinning or after blocking.
TEST(ThreadPool, ManyTinyJobsBackToBack) {
  ThreadPool pool(4);
  std::atomic<size_t> total{0};
  for (int round = 0; round < 5000; ++round) {
    const size_t n = 2 + static_cast<size_t>(round % 7);
    std::atomic<size_t> hits{0};
    pool.parallel_for(n, [&](size_t, int) { hits.fetch_add(1); });
    ASSERT_EQ(hits.load(), n) << "round " << round;
    total += n;
    // Now and then, pause past the spin window so the workers block and must be woken.
    if (round % 500 == 499) std::this_thread::sleep_for(std::chrono::microseconds(4 * ThreadPool::kSpinMicros));
  }
  EXPECT_GT(total.load(), 5000u);
}

// An idle pool blocks after its bounded spin: over 300 ms of idleness its 3 workers use almost no
// CPU (a pool that kept spinning would use ~0.9 CPU-seconds here). The count is the process's, so
// OpenBLAS's start-up spin is stopped first, as every CpuBackend does (cpu_backend.h).
TEST(ThreadPool, IdlePoolBlocksInsteadOfSpinning) {
  openblas_single_threaded();
  ThreadPool pool(4);
  std::atomic<int> sum{0};
  pool.parallel_for(8, [&](size_t t, int) { sum.fetch_add(static_cast<int>(t)); });
  ASSERT_EQ(sum.load(), 28);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past every spin window
  const double before = test::process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(test::process_cpu_seconds() - before, 0.1);
}

// A worker that is still busy long after the caller's own tasks are done (here it sleeps, as a
// descheduled one would) makes the caller run the next jobs alone for kMinInline, and they stay
// correct; the next straggler doubles the stretch.
TEST(ThreadPool, StragglerMakesTheCallerRunTheNextJobsAlone) {
  ThreadPool pool(2);
  const auto straggle = [&] {
    pool.parallel_for(64, [](size_t, int thread) {
      if (thread == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  };
  for (int attempt = 0; attempt < 5 && pool.inline_stretch() == ThreadPool::Clock::duration::zero(); ++attempt) {
    straggle();
  }
  ASSERT_EQ(pool.inline_stretch(), ThreadPool::kMinInline);
  ASSERT_LT(ThreadPool::Clock::now(), pool.inline_until());
  std::vector<int> threads(8, -1);
  pool.parallel_for(8, [&](size_t task, int thread) { threads[task] = thread; });
  EXPECT_EQ(threads, std::vector<int>(8, 0));
  // Once the stretch is over, jobs are shared again; the next straggler doubles the stretch.
  std::this_thread::sleep_until(pool.inline_until() + std::chrono::milliseconds(1));
  for (int attempt = 0; attempt < 5 && pool.inline_until() < ThreadPool::Clock::now(); ++attempt) straggle();
  EXPECT_EQ(pool.inline_stretch(), 2 * ThreadPool::kMinInline);
}

// A worker that starts late (woken late; here it sleeps 12 ms first) on one of a guided split's
// larger ranges is not a straggler. The split of 1024 items is 512, 256, 128, 64, 32, 16, 16, at
// 8 us an item. The yardstick is the largest range at the caller's pace: 4 ms, so up to
// 4 x 4 + 0.2 ms of waiting is no straggler (the wait is at most the 12 ms delay). Measured
// against the mean of the caller's ranges (about 1 ms when it runs all but the second), the
// wait of about 8 ms was one.
TEST(ThreadPool, LateWorkerOnALargeRangeIsNoStraggler) {
  bool worker_ran = false;
  bool stretched = true;
  for (int attempt = 0; attempt < 5 && !(worker_ran && !stretched); ++attempt) {
    ThreadPool pool(2);
    std::atomic<bool> worker_started{false};
    std::atomic<size_t> worker_items{0};
    pool.parallel_ranges(1024, 16, [&](size_t begin, size_t end, int thread) {
      if (thread != 0) {
        if (!worker_started.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(12));
        worker_items.fetch_add(end - begin);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(8 * (end - begin)));
    });
    worker_ran = worker_items.load() > 0;
    stretched = pool.inline_stretch() != ThreadPool::Clock::duration::zero();
  }
  EXPECT_TRUE(worker_ran) << "the worker never took a range in 5 jobs";
  EXPECT_FALSE(stretched) << "a late worker on a large range was taken for a straggler";
}

}  // namespace
}  // namespace kakeya::engine
