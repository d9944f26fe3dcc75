#pragma once
// Summary statistics over timing samples. Every sample is kept; these are derived from them.
#include <cstddef>
#include <vector>

namespace ktune {

struct Stats {
  std::size_t count = 0;
  double median_ns = 0, mean_ns = 0, std_ns = 0, min_ns = 0, max_ns = 0;
  // Relative standard error of the median estimate (std / sqrt(n) / median); the noise measure
  // a measurement stops on.
  double rel_error() const;
};

Stats summarize(const std::vector<double>& samples_ns);

// Relative standard error of the mean after dropping outliers beyond 3 robust sigmas of the
// median, so one slow sample (an interrupt, a clock change) does not keep a measurement running
// to its cap. When most samples tie (coarse timers), the MAD is zero and nothing is dropped.
// What the noise target is held against; infinity for fewer than two samples.
double robust_rel_error(const std::vector<double>& samples_ns);

}  // namespace ktune
