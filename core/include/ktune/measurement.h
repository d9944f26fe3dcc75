#pragma once
// Measurement settings and the generic sampling loop shared by every backend: warm-up, then
// timed samples until a relative noise target or a time cap, keeping every sample.
#include <chrono>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ktune/conditions.h"
#include "ktune/config.h"
#include "ktune/stats.h"
#include "ktune/trial.h"

namespace ktune {

enum class Method {
  Amortized,  // many launches between one pair of timestamps (or a captured graph): throughput
  PerLaunch,  // one pair per launch, caches flushed between launches: cold latency
};
std::string to_string(Method m);
Method method_from_string(const std::string& s);  // throws InputError

struct Tolerance {
  double atol = 1e-2;
  double rtol = 1e-2;
  double max_mismatch_fraction = 0.0;  // fraction of elements allowed outside atol + rtol*|ref|
};

struct MeasureSettings {
  Method method = Method::Amortized;
  double noise_target = 0.01;  // stop once Stats::rel_error() <= this (after min_samples)
  int min_samples = 5;
  int max_samples = 100;
  double warmup_ms = 20;  // run (untimed) for at least this long first
  // ... and for at least this long (at most half of max_ms_per_config) where the device sat idle
  // before the config (the run's start, a wait for compiles): a GPU's clocks follow its load (an
  // H100 at its power cap drops from 1,980 to about 1,450 MHz within half a second of a heavy
  // kernel), so a config timed straight after a pause would be timed at clocks the others never
  // see, and its median would set the bar that slow-aborts them.
  double settle_ms = 500;
  double min_sample_ms = 2;         // amortized: launches per sample chosen so one sample takes this long
  double max_ms_per_config = 2000;  // time cap for warm-up plus samples of one config
  bool slow_abort = true;           // stop a config early once it clearly cannot beat the best
  double slow_abort_margin = 0.25;  // ... when its fastest sample is this much slower than the best median
  bool rotate_buffers = false;      // amortized with input copies larger than the last-level cache
  // After the search, the best few configs are timed again in alternation and the fastest of
  // those paired numbers wins (measure_alternating): noise in one config's search timing cannot
  // crown it. 0 or 1: the search's own best wins.
  int remeasure_top = 3;
};

// JSON spellings shared by run metadata, saved sessions and the worker protocol, from the option
// tables of run_options.h. Reading: a missing key keeps the value of `base`; a key of the wrong
// type or out of its range is an InputError naming it (e.g. "measure.noise_target: expected a
// number"), so old files still load and typos or damaged values do not pass silently.
nlohmann::json to_json(const MeasureSettings& m);
nlohmann::json to_json(const Tolerance& t);
MeasureSettings measure_settings_from_json(const nlohmann::json& j, MeasureSettings base = {});
Tolerance tolerance_from_json(const nlohmann::json& j, Tolerance base = {});

// What the measurer asks a backend for: run `launches` launches and return ns per launch for
// that one sample. `deadline` lets long-running work stop early (it then throws a TrialFailure
// with status Timeout).
struct SampleRequest {
  Method method = Method::Amortized;
  int launches = 1;
  bool rotate_buffers = false;
  std::chrono::steady_clock::time_point deadline;
};

// Thrown by backends for a config that cannot be compiled, launched, validated or timed.
// The tuner turns it into a Trial with this status; it never escapes a run.
class TrialFailure : public std::runtime_error {
 public:
  TrialFailure(TrialStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
  TrialStatus status() const { return status_; }

 private:
  TrialStatus status_;
};

// A sample is a time: positive and finite. Anything else (a timer that wrapped, a worker's bug)
// is not data that may rank a config: returns `ns`, else throws TrialFailure (Crashed) naming
// `source` ("the backend", "the worker `python3 w.py`") and the value.
double checked_sample(double ns, const std::string& source);

struct MeasureOutcome {
  TrialStatus status = TrialStatus::Ok;  // Ok, Timeout or SlowAbort
  std::string note;
  std::vector<double> samples_ns;
  Stats stats;
};

// Runs warm-up and sampling through `sample` (one call = one timed sample). `best_median_ns`
// is the best median so far on this problem, for slow_abort. Throws what `sample` throws, and
// checked_sample's TrialFailure for a sample that is no time.
MeasureOutcome measure(const MeasureSettings& settings, const std::function<double(const SampleRequest&)>& sample,
                       std::optional<double> best_median_ns);

// One timed sample of one kernel: what measure() and the alternating measurements call.
using Sampler = std::function<double(const SampleRequest&)>;

// Measures kernels in alternation (a, b, c, a, b, c, ...) after a shared warm-up, so all see the
// same clocks, temperature and cache state: the fair basis for comparing them (a GPU under
// sustained load runs slower than a cool one, so timings taken minutes apart can disagree by
// 10 %). Each stops sampling at its noise target (after min_samples) or max_samples; the group
// gets the time cap of one config per kernel. slow_abort does not apply. Samples are checked as
// measure()'s are.
std::vector<MeasureOutcome> measure_alternating(const MeasureSettings& settings, const std::vector<Sampler>& kernels);
// The same for two kernels (a config against a baseline).
std::pair<MeasureOutcome, MeasureOutcome> measure_pair(const MeasureSettings& settings, const Sampler& a,
                                                       const Sampler& b);

// A config of a finished search timed again, in alternation with the other best few (the
// winner is the fastest of these paired numbers, not of the search's, taken at other moments).
struct Remeasured {
  Config config;
  double search_median_ns = 0;     // what the search measured
  Stats stats;                     // the alternating re-measurement ...
  std::vector<double> samples_ns;  // ... and its samples
  Conditions conditions;           // ... and the device's while it ran
};

}  // namespace ktune
