#pragma once
// Pieces shared by the CPU kernels' drivers: aligned buffers, the deadline check between macro
// blocks, and reading a config's parameters with errors that name the culprit.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ktune/config.h"

namespace ktune::cpu {

using Clock = std::chrono::steady_clock;

// 64-byte aligned (one cache line, one zmm register), uninitialized.
template <class T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n) { resize(n); }
  void resize(std::size_t n) {
    if (n == size_) return;
    void* p = n ? std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64) : nullptr;
    if (n && !p) throw std::bad_alloc();
    data_.reset(static_cast<T*>(p));
    size_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_ = 0;
};

// A launch's per-thread scratch: at least `threads` buffers of at least `n` elements each, kept
// between launches so that warm samples allocate nothing.
template <class T>
void reserve_per_thread(std::vector<AlignedBuffer<T>>& buffers, int threads, std::size_t n) {
  if (static_cast<int>(buffers.size()) < threads) buffers.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t)
    if (buffers[t].size() < n) buffers[t].resize(n);
}

// Shared by the threads of one launch: the first one to see the deadline pass stops them all.
// A default-constructed time point (the clock's epoch, SampleRequest's default) means none.
class StopFlag {
 public:
  explicit StopFlag(Clock::time_point deadline) : deadline_(deadline), active_(deadline != Clock::time_point{}) {}
  bool check() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    if (active_ && Clock::now() > deadline_) {
      stopped_.store(true, std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

 private:
  Clock::time_point deadline_;
  bool active_;
  std::atomic<bool> stopped_{false};
};

// Thread t's cell of an M x N output split among `threads`: N first, in whole NR-column
// micro-panels (each thread then packs only its own columns of the right operand, and all of
// the left one, the cheaper duplicate for the shapes that matter), M in whole MR-row panels
// where N has fewer panels than threads. A thread with nothing to do gets an empty cell.
struct GridCell {
  long m0, m1, n0, n1;
  bool empty() const { return m0 >= m1 || n0 >= n1; }
};
GridCell grid_cell(int t, int threads, long M, long N, int MR, int NR);

// Reads exactly the parameters `names` from `config`: a missing or unknown one is a
// TrialFailure(CompileError) naming it and the family's parameters.
std::map<std::string, long> read_params(const Config& config, std::initializer_list<const char*> names,
                                        const std::string& family);

struct UKernelSet;
// The micro-kernel set with `vec` f32 lanes, else TrialFailure(CompileError) saying which ISA
// each width needs.
const UKernelSet& require_ukernels(int vec);
// TrialFailure(LaunchError) when a config asks for more threads than the hardware has.
void require_threads(int threads, int hw_threads);

}  // namespace ktune::cpu
