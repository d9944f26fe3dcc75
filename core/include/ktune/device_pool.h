#pragma once
// DevicePool: the devices one run measures on (`ktune tune --devices 0,1`), each reached through
// its own backend (a worker process per device), measuring a batch of configs concurrently: every
// device prepares a few configs ahead and measures one at a time, taking the next config of the
// batch when it is free. With one device it is the tuner's loop as it always was: every config of
// the batch is prepared ahead on the compile pool and measured in the order proposed.
//
// The devices of one pool must be identical (one registry device slug): their times are compared
// with one another. The tuner decides what to measure; the pool only spreads the measuring. With
// several devices, each trial's metrics name the device that measured it ("device": its index).
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ktune/backend.h"
#include "ktune/trial.h"

namespace ktune {

// One device and the backend that measures on it.
struct Lane {
  Backend* backend = nullptr;
  DeviceInfo device;
};

class DevicePool {
 public:
  // `compile_threads`: threads preparing configs ahead, shared out over the lanes.
  DevicePool(std::vector<Lane> lanes, unsigned compile_threads);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  std::size_t size() const { return lanes_.size(); }
  const Lane& lane(std::size_t i) const { return lanes_.at(i); }
  // A session on every device for one problem (the previous problem's are closed).
  void open(const KernelFamily& family, const Problem& problem, std::uint64_t seed);
  ProblemSession& session(std::size_t lane = 0);

  // Called on the thread that calls measure(), never concurrently.
  struct Hooks {
    // Before config `index` of the batch is measured; false hands out no further config (cancel).
    std::function<bool(std::size_t index)> start;
    // Config `index` measured: status, error, compile time, validation numbers, samples and stats.
    std::function<void(std::size_t index, Trial measured)> finish;
    // The best median so far (slow abort); nullopt while there is none. Called from the devices'
    // threads: it must be thread-safe.
    std::function<std::optional<double>()> best;
  };
  // Measures each config of `batch` once, over the devices; returns once every config started is
  // finished. A RunError (device lost) on any device, or an exception from a hook, stops handing
  // out configs and is rethrown once every device has stopped.
  void measure(const std::vector<Config>& batch, const Tolerance& tolerance, const MeasureSettings& settings,
               const Hooks& hooks);

 private:
  struct Slot;
  void run_lane(std::size_t lane, const std::vector<Config>& batch, const Tolerance& tolerance,
                const MeasureSettings& settings, const std::function<std::optional<std::size_t>(bool ahead)>& claim,
                std::size_t lookahead, const std::function<bool(std::size_t)>& start,
                const std::function<void(std::size_t, Trial)>& finish,
                const std::function<std::optional<double>()>& best);
  void measure_concurrently(const std::vector<Config>& batch, const Tolerance& tolerance,
                            const MeasureSettings& settings, const Hooks& hooks);

  std::vector<Lane> lanes_;
  unsigned compile_threads_;
  std::vector<std::unique_ptr<Slot>> slots_;  // per lane: the problem's session and its prepare pool
};

}  // namespace ktune
