#include "thread_pool.h"

#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ktune::cpu {

namespace {
// Workers spin this many rounds before sleeping: back-to-back launches then start without a
// futex wake-up, while an idle pool costs no CPU (the machine may be shared).
constexpr int kSpinRounds = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n > size())
    throw std::logic_error("thread pool of " + std::to_string(size()) + " asked to run " + std::to_string(n) +
                           " tasks");
  if (n <= 1) {
    fn(0);
    return;
  }
  std::lock_guard serial(run_mutex_);
  {
    std::lock_guard lock(mutex_);
    task_ = &fn;
    active_ = n;
    error_ = nullptr;
    pending_.store(n - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  try {
    fn(0);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0 && spin < kSpinRounds; ++spin) cpu_relax();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinRounds; ++spin) {
      cpu_relax();
      gen = generation_.load(std::memory_order_acquire);
    }
    const std::function<void(int)>* task = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (stopping_) return;
      if (index >= active_) continue;
      task = task_;
    }
    try {
      (*task)(index);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace ktune::cpu
