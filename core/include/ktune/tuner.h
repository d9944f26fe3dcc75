#pragma once
// Tuner: the loop. For each problem: enumerate and prune the space, prepare configs ahead of
// measurement on a thread pool, validate and measure each one, record every trial, and report
// value-type events to an observer (the CLI prints them; the GUI turns them into signals).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ktune/backend.h"
#include "ktune/device_pool.h"
#include "ktune/measurement.h"
#include "ktune/problem.h"
#include "ktune/run_settings.h"
#include "ktune/search_space.h"
#include "ktune/strategy.h"
#include "ktune/trial.h"
#include "ktune/winner.h"

namespace ktune {

struct TuneRequest : RunSettings {
  KernelFamily family;
  int compile_threads = 0;  // 0 = hardware concurrency
  // Run storage: empty run_dir = do not save (--no-save).
  std::filesystem::path run_dir;
  // Continue run_dir: its recorded trials are replayed into the strategy, not measured again.
  // The settings must be the run's (RunStore::read_metadata): a difference is an InputError.
  bool resume = false;
  std::vector<std::string> arguments;  // the command line, for run_metadata.json
};

// Best result of one problem.
struct ProblemResult {
  Problem problem;
  // The winner (none when no config passed): its search trial (id, config, compile time) with the
  // stats, samples, TFLOP/s and GB/s it was chosen by, which are its re-measure's when
  // choice.by is Remeasure; choice.search keeps the search trial's own stats.
  std::optional<Trial> best;
  Choice choice;
  std::uint64_t space_total = 0, space_valid = 0;
  std::string baseline_name;  // "cuBLAS", "OpenBLAS" or empty
  // The baseline and the best config, timed in alternation after the search (in the re-measure's
  // group, so best_paired is then best->stats; alone with the best otherwise): the speedup
  // compares them under the same clocks, which the search's own timing of the best, taken at
  // another moment, would not.
  std::optional<Stats> baseline;
  std::optional<Stats> best_paired;
  // The device's conditions while the baseline was timed; the winner's are in best->metrics (of the
  // measurement its stats are from).
  Conditions baseline_conditions;
  // The best few configs of the search timed again in alternation (MeasureSettings::remeasure_top),
  // in the search's order; `best` is the fastest of them. Empty when nothing was re-measured.
  std::vector<Remeasured> remeasured;
  // baseline median / best median (paired when available); nullopt without both.
  std::optional<double> speedup() const;
};

struct RunSummary {
  std::vector<ProblemResult> results;
  std::map<std::string, std::uint64_t> status_counts;  // "ok" -> n
  double elapsed_s = 0;
  bool cancelled = false;
  std::filesystem::path run_dir;  // empty when not saved
};

namespace event {
struct RunStarted {
  std::size_t problems;
  std::uint64_t planned_trials;
  DeviceInfo device;
};
struct ProblemStarted {
  std::size_t index;
  Problem problem;
  PruneReport space;
  std::uint64_t planned;
  Variables variables;  // the problem's and device's, which pruned the space (pruned_trials())
};
struct TrialStarted {
  std::int64_t id;
  std::string problem_key;
  Config config;
};
struct TrialFinished {
  Trial trial;
  bool new_best;
};
struct Progress {
  std::uint64_t done, total;
  double elapsed_s, eta_s, trials_per_s;
};
struct ProblemFinished {
  ProblemResult result;
};
struct RunFinished {
  RunSummary summary;
};
struct RunFailed {
  std::string message;
};
struct Log {
  std::string message;
};  // notes worth showing (resumed N trials, baseline failed)
}  // namespace event

using TuneEvent =
    std::variant<event::RunStarted, event::ProblemStarted, event::TrialStarted, event::TrialFinished, event::Progress,
                 event::ProblemFinished, event::RunFinished, event::RunFailed, event::Log>;

class TuneObserver {
 public:
  virtual ~TuneObserver() = default;
  // Called on the tuner's thread; implementations must be quick (queue, print).
  virtual void on_event(const TuneEvent& e) = 0;
};

class Tuner {
 public:
  Tuner(Backend& backend, DeviceInfo device);
  // Several identical devices (one registry slug; other models are an InputError), measuring a
  // run's configs concurrently (DevicePool). The first device names the run's device.
  explicit Tuner(std::vector<Lane> lanes);
  // Runs to completion (or cancel). Throws InputError for a bad request (impossible space,
  // unknown field) before measuring anything; RunError when the run cannot go on (disk).
  RunSummary run(const TuneRequest& request, TuneObserver& observer);

  // Thread-safe controls for front ends.
  void cancel() { cancelled_ = true; }
  void set_paused(bool paused) { paused_ = paused; }
  bool paused() const { return paused_; }

 private:
  Backend& backend() const { return *lanes_.front().backend; }
  std::vector<Lane> lanes_;
  const DeviceInfo& device() const { return lanes_.front().device; }
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> paused_{false};
};

}  // namespace ktune
