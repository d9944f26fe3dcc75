#include "ktune/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ktune {

double Stats::rel_error() const {
  if (count < 2 || median_ns <= 0) return INFINITY;
  return std_ns / std::sqrt(static_cast<double>(count)) / median_ns;
}

Stats summarize(const std::vector<double>& samples_ns) {
  Stats s;
  s.count = samples_ns.size();
  if (s.count == 0) return s;
  std::vector<double> sorted = samples_ns;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median_ns = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.mean_ns = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  s.min_ns = sorted.front();
  s.max_ns = sorted.back();
  if (n > 1) {
    double ss = 0;
    for (double x : sorted) ss += (x - s.mean_ns) * (x - s.mean_ns);
    s.std_ns = std::sqrt(ss / static_cast<double>(n - 1));
  }
  return s;
}

}  // namespace ktune
