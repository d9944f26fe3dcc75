#pragma once
// Trial: one config measured on one problem, with its status. Failing configs are trials too.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/stats.h"

namespace ktune {

enum class TrialStatus {
  Ok,            // validated and measured
  Pruned,        // failed a constraint; never compiled
  CompileError,  // the backend could not build it (log in error)
  LaunchError,   // does not fit the device: shared memory, registers, workspace, threads
  WrongResult,   // output differs from the reference beyond tolerance
  Timeout,       // exceeded the per-config time cap
  Crashed,       // the launch faulted (illegal address, exception)
  SlowAbort,     // measurement stopped early: could not beat the best so far
};
inline constexpr TrialStatus kAllTrialStatuses[] = {
    TrialStatus::Ok,          TrialStatus::Pruned,  TrialStatus::CompileError, TrialStatus::LaunchError,
    TrialStatus::WrongResult, TrialStatus::Timeout, TrialStatus::Crashed,      TrialStatus::SlowAbort};

const char* to_string(TrialStatus s);                        // "ok", "pruned", "compile_error", ...
TrialStatus trial_status_from_string(const std::string& s);  // throws InputError

struct Trial {
  std::int64_t id = 0;      // order within the run, from 0
  std::string problem_key;  // Problem::key()
  Config config;
  TrialStatus status = TrialStatus::Ok;
  std::string error;  // why it failed, for every status but ok
  Stats stats;
  std::vector<double> samples_ns;
  double compile_time_s = 0;
  double max_abs_error = 0;  // against the reference, when validated
  double mismatch_fraction = 0;
  double tflops = 0;  // from the family's FLOP count and the median
  double gbps = 0;
  double started_at_s = 0;  // seconds since run start
  // Further numbers a run recorded beside the time (an imported Kernel Tuner cache's GFLOP/s,
  // energy, power), by name; trials.csv keeps them as one JSON object in its metrics column.
  std::map<std::string, double> metrics;
};

// Sets t.tflops and t.gbps from the family's FLOP and byte counts and t's median (0 without one).
void set_rates(Trial& t, double flops, double bytes);

// What a trial's distance from best divides by (vs_best in trials.csv exports, "× best" on the
// workbench's landscape): the lowest median among its problem's ok trials. Takes `t` into
// `best` (problem key -> that median); true when it set or lowered its problem's.
bool note_best_median(const Trial& t, std::map<std::string, double>& best);

}  // namespace ktune
