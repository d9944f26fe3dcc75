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

double robust_rel_error(const std::vector<double>& samples) {
  const std::size_t n = samples.size();
  if (n < 2) return INFINITY;
  std::vector<double> s = samples;
  std::nth_element(s.begin(), s.begin() + static_cast<long>(n / 2), s.end());
  const double med = s[n / 2];
  for (auto& x : s) x = std::abs(x - med);
  std::nth_element(s.begin(), s.begin() + static_cast<long>(n / 2), s.end());
  const double limit = 3 * 1.4826 * s[n / 2];
  double sum = 0, sum2 = 0;
  std::size_t kept = 0;
  for (double x : samples)
    if (limit == 0 || std::abs(x - med) <= limit) {
      sum += x;
      sum2 += x * x;
      ++kept;
    }
  if (kept < 2) return INFINITY;
  const double mean = sum / static_cast<double>(kept);
  const double var = std::max(0.0, (sum2 - static_cast<double>(kept) * mean * mean) / static_cast<double>(kept - 1));
  return mean > 0 ? std::sqrt(var / static_cast<double>(kept)) / mean : INFINITY;
}

}  // namespace ktune
