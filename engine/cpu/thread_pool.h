#pragma once
// A fixed pool of worker threads for data-parallel loops in the forward pass.
//
// Tasks are handed out dynamically (an atomic counter), and parallel_for returns as soon as every
// TASK has finished — it never waits for a worker to wake up or to acknowledge the job. On an
// oversubscribed host (a runner shares its cores with other busy processes) a descheduled worker
// then costs nothing: the calling thread takes the tasks itself. A pool that waits for all its
// workers at every job collapses there (~50x on a tiny model with one busy process on 2 cores).
//
// Between jobs a thread first SPINS for a short, bounded time (kSpinMicros, with the CPU's pause
// hint), then BLOCKS on a condition variable: one decoded token is ~100 jobs separated by
// microseconds of serial work, so the spin saves a futex wake-up per job, and the bound keeps an
// idle pool at zero CPU. The spin also has to outlast the wait at a job's end, while the other
// thread finishes its last range (about 100 us of a TinyLlama-shaped F16 decode's FFN): at 50 us
// the worker of a 2-thread F16 decode on a 2-core AMD EPYC VM was idle for about a third of the
// decode (/proc/stat), blocking and being woken at most jobs; at 500 us, alternating runs of
// `ar-bench -t 2 -p 128 -n 32 -r 3` decoded 1.08x as fast for F16 (0.95-1.12, 5 pairs), BF16
// (1.03-1.08, 3) and Q4_0 (0.95-1.16, 4), Q4_0 prefill pp128 at 0.98x (0.92-1.04, 5), and 2
// threads next to a spinning process decoded as fast as with 50 us. 2000 us was no faster.
// The calling thread takes part in every job, so ThreadPool(1) runs everything inline with no
// worker threads at all.
//
// When the host is oversubscribed anyway, a worker can be descheduled in the middle of a task,
// and the caller then waits a scheduler time slice for it. The caller notices (it waited far
// longer than the job's largest task takes: kStragglerFactor x that task's items at the caller's
// own time per item, plus kStragglerSlackMicros) and runs the next jobs alone for a while:
// kMinInline after the first such wait, doubling up to kMaxInline while it recurs, back to the
// minimum after kCleanJobsToReset parallel jobs in a row without a straggler. So --threads 2 next
// to a busy process degrades towards the 1-thread speed instead of below it. The stretch is a
// time, not a number of jobs: it had been 64 jobs at first, about 40 ms of a 2-thread F16 decode
// of a TinyLlama-shaped model but half a second of its 128-token prefill (64 of its ~180 jobs).
// On a quiet 2-core AMD EPYC VM, where a worker is still preempted now and then, some 2-thread F16
// pp128 runs had run at 60-78 tok/s instead of 85-95; alternating before/after (8 pairs) the time
// stretch ran F16 pp128 1.10x (0.94-1.47) and decode 1.11x, BF16 (4 pairs) 0.95x and 1.07x, and
// next to a spinning process 2 threads still ran as fast as 1 (README "Speed").
// The yardstick is the largest task, not the mean of the caller's: parallel_ranges' guided split
// gives the caller the first half of a mat-vec and then mostly short ranges, so its mean task is
// a fraction of the quarter-sized range a worker that started late is still reading. Measured
// against that mean, a quiet 2-core Zen 5 EPYC VM's `ar-bench -t 2 -p 1 -n 48 -r 3` (synth
// TinyLlama F16) saw 16-28 stragglers a run, most of them waits of 300-1000 us after the caller
// had run 9 of 10 ranges, and the caller ran alone for 0.5-1.5 s of the run; against the largest
// task 6-8 are left (waits of 1-39 ms, the worker not asleep), 0.15-0.2 s alone. Decode speed,
// alternating: F16 1.00x (14 pairs), BF16 1.03x (14), Q4_0 1.01x (6), within this VM's noise.
//
// REQUIRES: external synchronization — one job at a time (parallel_for is not re-entrant and
// must not be called from inside a task).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kakeya::engine {

class ThreadPool {
 public:
  // n_threads >= 1 counts the calling thread; n_threads - 1 workers are started.
  // Values < 1 are treated as 1.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Runs fn(task, thread) for every task in [0, n_tasks), tasks handed out dynamically
  // (atomic counter), and returns when all have finished. `thread` is in [0, n_threads())
  // and identifies the executing thread, for per-thread scratch buffers.
  void parallel_for(size_t n_tasks, const std::function<void(size_t task, int thread)>& fn);

  // Splits [0, n) into consecutive ranges and runs fn(begin, end, thread) on each, handed out in
  // order. The split is guided self-scheduling (Polychronopoulos & Kuck, "Guided
  // Self-Scheduling", IEEE Trans. Computers 36(12), 1987): each range holds 1/n_threads() of the
  // items not yet in a range, rounded up and at least `min_chunk` (the last: what is left).
  // So the first ranges are long memory streams and the last are short, and the threads finish a
  // job within about one short range of each other. Before, the ranges were equal, 4 per thread
  // (4 had read 4% faster than 8), and the thread done first waited up to one of them, about an
  // eighth of a mat-vec: on the 2-core Intel Xeon VM, in synth TinyLlama Q4_0 decode on two
  // threads the worker spent 9-11% of its samples waiting in the pool (at job ends, and through
  // the caller's serial steps between jobs) and the caller 6-7% (at job ends; perf, 3 runs).
  // Guided against equal ranges, `ar-bench -t 2 -p 1 -n 32 -r 3` alternating, medians of 7-17
  // rounds per type: Q4_0 1.035x (rounds 1.01-1.10), Q8_0 1.04x (0.99-1.10), Q4_K 1.03x
  // (0.95-1.09); F16 1.02x, BF16 and Q6_K 0.99x (0.93-1.06), which read at the two-thread stream
  // already. Next to a spinning process, two threads still decode as fast as one (the straggler
  // rule above takes over after the first late range, as it did). A descheduled worker can hold
  // back at most 1/n_threads() of one job.
  void parallel_ranges(size_t n, size_t min_chunk,
                       const std::function<void(size_t begin, size_t end, int thread)>& fn);

  // Upper bound on one spin phase, in microseconds, before blocking.
  static constexpr int kSpinMicros = 500;
  static constexpr int kStragglerFactor = 4;
  static constexpr int kStragglerSlackMicros = 200;
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kMinInline{25'000};
  static constexpr std::chrono::microseconds kMaxInline{1'600'000};
  static constexpr size_t kCleanJobsToReset = 256;

  // Until when the calling thread runs every job alone after a straggler (a time in the past when
  // it does not), and the length of the last such stretch (zero before the first): for tests
  // and reports.
  Clock::time_point inline_until() const { return inline_until_; }
  Clock::duration inline_stretch() const { return inline_stretch_; }

 private:
  void worker_loop(int thread);
  // parallel_for's job, where task t weighs (*task_bounds)[t + 1] - (*task_bounds)[t] items (1
  // when task_bounds is null) and the heaviest weighs largest_task: the straggler check's scale.
  void run_job(size_t n_tasks, const std::function<void(size_t task, int thread)>& fn,
               const std::vector<size_t>* task_bounds, size_t largest_task);
  // Claims and runs tasks of the current job until none is left; returns their items.
  size_t run_tasks(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  // Publication: the caller closes the previous job (open_ = false), waits until no worker is
  // inside it (active_ == 0), writes the job fields, bumps generation_ and reopens. A worker
  // announces itself (active_ += 1) before it re-checks open_, so it either sees the job closed
  // or is waited for. Wake-ups are Dekker-style too: a waiter announces itself (sleepers_,
  // main_waiting_) and re-checks its condition under mu_; the other side changes the condition,
  // then notifies under mu_ if anyone announced. All atomics are seq_cst.
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(size_t, int)>* job_ = nullptr;  // written while the job is closed
  size_t n_tasks_ = 0;                                     // written while the job is closed
  const std::vector<size_t>* task_bounds_ = nullptr;       // written while the job is closed
  std::atomic<size_t> next_task_{0};
  std::atomic<size_t> tasks_done_{0};
  std::atomic<size_t> generation_{0};  // bumped once per job
  std::atomic<bool> open_{false};      // the job fields are valid and may be read
  std::atomic<int> active_{0};         // workers between entering a job and leaving it
  std::atomic<int> sleepers_{0};       // workers blocked (or about to block) on cv_start_
  std::atomic<bool> main_waiting_{false};
  std::atomic<bool> stop_{false};
  Clock::time_point inline_until_{};     // caller thread only
  Clock::duration inline_stretch_{};     // caller thread only: length of the last inline stretch
  size_t clean_jobs_ = 0;        // caller thread only: parallel jobs since the last straggler
  std::vector<size_t> range_bounds_;  // caller thread only: parallel_ranges' split, reused
};

}  // namespace kakeya::engine
