#include "ktune/parameter_slice.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace ktune {

namespace {

// The q-quantile of sorted values, interpolated linearly between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

struct Gathered {
  SliceValue value;
  std::vector<double> times;  // ok search medians
};

SliceValue summarise(Gathered g) {
  SliceValue v = std::move(g.value);
  std::vector<double>& t = g.times;
  v.ok = t.size();
  if (t.empty()) return v;
  std::sort(t.begin(), t.end());
  v.best_ns = t.front();
  v.q1_ns = quantile(t, 0.25);
  v.median_ns = quantile(t, 0.5);
  v.q3_ns = quantile(t, 0.75);
  v.max_ns = t.back();
  return v;
}

}  // namespace

bool failed_status(TrialStatus s) {
  return s != TrialStatus::Ok && s != TrialStatus::SlowAbort && s != TrialStatus::Pruned;
}

std::size_t SliceValue::failed_total() const { return std::accumulate(failed.begin(), failed.end(), std::size_t{0}); }

std::string SliceValue::failed_text() const {
  std::string out;
  for (TrialStatus s : kAllTrialStatuses) {
    const std::size_t n = failed[static_cast<std::size_t>(s)];
    if (n == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + to_string(s);
  }
  return out;
}

std::size_t ParameterSlice::ok() const {
  std::size_t n = 0;
  for (const SliceValue& v : values) n += v.ok;
  return n;
}

std::size_t ParameterSlice::failed() const {
  std::size_t n = 0;
  for (const SliceValue& v : values) n += v.failed_total();
  return n;
}

std::vector<ParameterSlice> parameter_slices(const std::vector<Trial>& trials, const std::string& problem_key,
                                             const std::vector<std::string>& parameters) {
  std::vector<std::map<ParamValue, Gathered>> gathered(parameters.size());
  for (const Trial& t : trials) {
    if (t.problem_key != problem_key || t.status == TrialStatus::Pruned) continue;
    for (std::size_t j = 0; j < parameters.size(); ++j) {
      if (!t.config.has(parameters[j])) continue;
      const ParamValue& value = t.config.value(parameters[j]);
      Gathered& g = gathered[j][value];
      g.value.value = value;
      if (t.status == TrialStatus::Ok && t.stats.count > 0) {
        g.times.push_back(t.stats.median_ns);
      } else if (t.status == TrialStatus::SlowAbort) {
        if (t.stats.count > 0) {
          const double ns = t.stats.median_ns;
          g.value.slow_abort_best_ns = g.value.slow_abort_best_ns > 0 ? std::min(g.value.slow_abort_best_ns, ns) : ns;
        }
        ++g.value.slow_abort;
      } else if (failed_status(t.status)) {
        ++g.value.failed[static_cast<std::size_t>(t.status)];
      }
    }
  }
  std::vector<ParameterSlice> out;
  for (std::size_t j = 0; j < parameters.size(); ++j) {
    ParameterSlice slice{parameters[j], {}};
    for (auto& [value, g] : gathered[j]) slice.values.push_back(summarise(std::move(g)));
    out.push_back(std::move(slice));
  }
  return out;
}

}  // namespace ktune
