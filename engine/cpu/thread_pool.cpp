#include "engine/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kakeya::engine {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or until ThreadPool::kSpinMicros have passed; returns done().
template <typename Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      if (done()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_start_.notify_all();
  for (auto& w : workers_) w.join();
}

size_t ThreadPool::run_tasks(int thread) {
  size_t ran = 0;
  for (;;) {
    const size_t task = next_task_.fetch_add(1);
    if (task >= n_tasks_) return ran;
    (*job_)(task, thread);
    ran += task_bounds_ == nullptr ? 1 : (*task_bounds_)[task + 1] - (*task_bounds_)[task];
    if (tasks_done_.fetch_add(1) + 1 == n_tasks_ && main_waiting_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::worker_loop(int thread) {
  size_t seen = 0;
  for (;;) {
    auto has_job = [&] { return stop_.load() || (open_.load() && generation_.load() != seen); };
    if (!spin_until(has_job)) {
      sleepers_.fetch_add(1);
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_start_.wait(lock, has_job);
      }
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    active_.fetch_add(1);
    if (open_.load()) {  // still open after announcing: the fields cannot change until we leave
      seen = generation_.load();
      run_tasks(thread);  // a job finished by others leaves no task: this returns at once
    }
    active_.fetch_sub(1);
  }
}

void ThreadPool::parallel_for(size_t n_tasks,
                              const std::function<void(size_t task, int thread)>& fn) {
  run_job(n_tasks, fn, nullptr, 1);
}

void ThreadPool::run_job(size_t n_tasks, const std::function<void(size_t task, int thread)>& fn,
                         const std::vector<size_t>* task_bounds, size_t largest_task) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1 || Clock::now() < inline_until_) {
    for (size_t i = 0; i < n_tasks; ++i) fn(i, 0);
    return;
  }
  // Close the previous job; a worker still inside it has no task left and is only leaving.
  open_.store(false);
  while (active_.load() != 0) std::this_thread::yield();
  job_ = &fn;
  n_tasks_ = n_tasks;
  task_bounds_ = task_bounds;
  next_task_.store(0);
  tasks_done_.store(0);
  generation_.fetch_add(1);
  open_.store(true);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_start_.notify_all();
  }
  const auto start = Clock::now();
  const size_t ran = run_tasks(0);  // in items: what the caller's tasks weighed
  const auto own_done = Clock::now();
  auto all_done = [&] { return tasks_done_.load() == n_tasks; };
  if (!spin_until(all_done)) {
    main_waiting_.store(true);
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_done_.wait(lock, all_done);
    }
    main_waiting_.store(false);
  }
  // Straggler check (see the header): a worker still busy long after the caller's own tasks
  // were done, far longer than the job's largest task takes at the caller's pace, was
  // descheduled, not slow.
  const auto waited = Clock::now() - own_done;
  const auto largest = std::chrono::duration<double, Clock::period>(own_done - start) *
                       (static_cast<double>(largest_task) / static_cast<double>(std::max<size_t>(ran, 1)));
  if (ran > 0 && waited > kStragglerFactor * largest + std::chrono::microseconds(kStragglerSlackMicros)) {
    inline_stretch_ = std::clamp<Clock::duration>(2 * inline_stretch_, kMinInline, kMaxInline);
    inline_until_ = Clock::now() + inline_stretch_;
    clean_jobs_ = 0;
  } else if (++clean_jobs_ >= kCleanJobsToReset) {
    inline_stretch_ = Clock::duration::zero();
  }
}

void ThreadPool::parallel_ranges(size_t n, size_t min_chunk,
                                 const std::function<void(size_t, size_t, int)>& fn) {
  if (n == 0) return;
  min_chunk = std::max<size_t>(1, min_chunk);
  const size_t threads = static_cast<size_t>(n_threads_);
  // Guided self-scheduling: each range takes 1/threads of what is left (at least min_chunk, never
  // past n), so the ranges shrink from n/threads down to min_chunk.
  range_bounds_.clear();
  range_bounds_.push_back(0);
  for (size_t at = 0; at < n;) {
    const size_t rest = n - at;
    at += std::min(rest, std::max(min_chunk, (rest + threads - 1) / threads));
    range_bounds_.push_back(at);
  }
  const std::vector<size_t>& bounds = range_bounds_;
  run_job(
      bounds.size() - 1, [&](size_t c, int thread) { fn(bounds[c], bounds[c + 1], thread); }, &bounds,
      bounds[1] - bounds[0]);  // the first range is the largest
}

}  // namespace kakeya::engine
