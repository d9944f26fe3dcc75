#pragma once
// A slice of one shape's trials along one parameter (Optuna's slice plot, summarised): for each
// value the parameter took, the best and the spread of the ok trials' latencies, and how many
// trials at that value stopped early or failed, so a value that fails reads as such rather than
// as a gap.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "ktune/trial.h"

namespace ktune {

struct SliceValue {
  ParamValue value;
  // Search medians of the ok trials at this value: count, best (lowest), quartiles (linear
  // interpolation, as numpy's default) and the slowest. All 0 when no trial there was ok.
  std::size_t ok = 0;
  double best_ns = 0, q1_ns = 0, median_ns = 0, q3_ns = 0, max_ns = 0;
  // slow_abort trials: stopped early, their times lower bounds, so not in the quartiles; the
  // lowest of them.
  std::size_t slow_abort = 0;
  double slow_abort_best_ns = 0;
  // Trials that failed (no time), by status (indexed by TrialStatus).
  std::array<std::size_t, std::size(kAllTrialStatuses)> failed{};
  std::size_t failed_total() const;
  // "2 compile_error, 1 wrong_result"; empty when none failed.
  std::string failed_text() const;
};

struct ParameterSlice {
  std::string parameter;
  std::vector<SliceValue> values;  // in the values' order (ParamValue's)
  std::size_t ok() const;
  std::size_t failed() const;
};

// One slice per parameter over the trials of `problem_key` that ran (pruned configs never did),
// in the order the parameters are given; a trial lacking the parameter is left out of its slice.
std::vector<ParameterSlice> parameter_slices(const std::vector<Trial>& trials, const std::string& problem_key,
                                             const std::vector<std::string>& parameters);

// Whether a status is a failure: the trial ran and has no time (not ok, slow_abort or pruned).
bool failed_status(TrialStatus status);

}  // namespace ktune
