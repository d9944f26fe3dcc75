#pragma once
// A persistent pool owned by the backend: kernels are timed in microseconds, so starting
// threads per launch would dominate what we measure. The calling thread is worker 0.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ktune::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // total threads, the caller included
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(0) .. fn(n-1) in parallel, fn(0) on the calling thread, and returns when all are
  // done; rethrows the first exception. n <= size(). Concurrent callers are serialized.
  void run(int n, const std::function<void(int)>& fn);

 private:
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one parallel region at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  int active_ = 0;
  const std::function<void(int)>* task_ = nullptr;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace ktune::cpu
