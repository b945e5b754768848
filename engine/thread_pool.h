#pragma once
// A fixed pool of worker threads for data-parallel loops in the forward pass.
//
// Workers BLOCK on a condition variable between jobs: an idle pool costs no CPU (a runner host
// may share its cores with another busy process). The calling thread takes part in every job,
// so ThreadPool(1) runs everything inline with no worker threads at all.
//
// REQUIRES: external synchronization — one job at a time (parallel_for is not re-entrant and
// must not be called from inside a task).
#include <atomic>
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

  // Splits [0, n) into ranges of at least `min_chunk` items, about 4 per thread,
  // and runs fn(begin, end, thread) on each.
  void parallel_ranges(size_t n, size_t min_chunk,
                       const std::function<void(size_t begin, size_t end, int thread)>& fn);

 private:
  void worker_loop(int thread);
  void run_tasks(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(size_t, int)>* job_ = nullptr;  // set under mu_ before a job
  size_t n_tasks_ = 0;                                     // set under mu_ before a job
  std::atomic<size_t> next_task_{0};
  size_t generation_ = 0;                                  // guarded by mu_
  int busy_workers_ = 0;                                   // guarded by mu_
  bool stop_ = false;                                      // guarded by mu_
};

}  // namespace kakeya::engine
