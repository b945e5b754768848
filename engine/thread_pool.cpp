#include "engine/thread_pool.h"

#include <algorithm>

namespace kakeya::engine {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_tasks(int thread) {
  const auto& fn = *job_;
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks_) break;
    fn(task, thread);
  }
}

void ThreadPool::worker_loop(int thread) {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_tasks(thread);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_workers_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n_tasks,
                              const std::function<void(size_t task, int thread)>& fn) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (size_t i = 0; i < n_tasks; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    n_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  run_tasks(0);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [&] { return busy_workers_ == 0; });
  job_ = nullptr;
}

void ThreadPool::parallel_ranges(size_t n, size_t min_chunk,
                                 const std::function<void(size_t, size_t, int)>& fn) {
  if (n == 0) return;
  min_chunk = std::max<size_t>(1, min_chunk);
  const size_t target = static_cast<size_t>(n_threads_) * 4;
  size_t chunk = std::max(min_chunk, (n + target - 1) / target);
  const size_t n_chunks = (n + chunk - 1) / chunk;
  parallel_for(n_chunks, [&](size_t c, int thread) {
    const size_t begin = c * chunk;
    fn(begin, std::min(n, begin + chunk), thread);
  });
}

}  // namespace kakeya::engine
