#include "discrete_space.h"

#include <algorithm>
#include <set>

namespace ktune::detail {

void DiscreteSpace::reset(std::vector<Config> valid) {
  valid_ = std::move(valid);
  values_.clear();
  points_.clear();
  index_.clear();
  if (valid_.empty()) return;
  std::vector<std::set<ParamValue>> seen(valid_.front().values().size());
  for (const auto& c : valid_)
    for (std::size_t d = 0; d < seen.size() && d < c.values().size(); ++d) seen[d].insert(c.values()[d].second);
  for (const auto& s : seen) values_.emplace_back(s.begin(), s.end());
  for (std::size_t i = 0; i < valid_.size(); ++i) {
    Point p(values_.size());
    for (std::size_t d = 0; d < p.size(); ++d) {
      const auto& v = values_[d];
      p[d] = static_cast<int>(std::lower_bound(v.begin(), v.end(), valid_[i].values()[d].second) - v.begin());
    }
    index_.emplace(p, i);
    points_.push_back(std::move(p));
  }
}

std::optional<std::size_t> DiscreteSpace::find(const Point& p) const {
  const auto it = index_.find(p);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> DiscreteSpace::find(const Config& c) const {
  if (c.values().size() != values_.size()) return std::nullopt;
  Point p(values_.size());
  for (std::size_t d = 0; d < p.size(); ++d) {
    const auto& v = values_[d];
    const auto it = std::lower_bound(v.begin(), v.end(), c.values()[d].second);
    if (it == v.end() || *it != c.values()[d].second) return std::nullopt;
    p[d] = static_cast<int>(it - v.begin());
  }
  const auto found = find(p);
  // Same values, other parameter names (another space): not this config.
  if (found && !(valid_[*found] == c)) return std::nullopt;
  return found;
}

double DiscreteSpace::normalized(std::size_t i, std::size_t d) const {
  const std::size_t n = values_[d].size();
  return n < 2 ? 0.5 : static_cast<double>(points_[i][d]) / static_cast<double>(n - 1);
}

std::optional<double> trial_time(const Trial& t) {
  if ((t.status == TrialStatus::Ok || t.status == TrialStatus::SlowAbort) && t.stats.median_ns > 0)
    return t.stats.median_ns;
  return std::nullopt;
}

void Evaluations::reset(std::size_t n) {
  proposed_.assign(n, false);
  known_.assign(n, false);
  time_.assign(n, std::nullopt);
  order_.clear();
  handed_ = 0;
}

void Evaluations::record(std::size_t i, const Trial& t) {
  if (known_[i]) return;
  known_[i] = true;
  time_[i] = trial_time(t);
  order_.push_back(i);
}

std::optional<std::size_t> Evaluations::random_unproposed(std::mt19937_64& rng) const {
  const std::size_t left = proposed_.size() - handed_;
  if (left == 0) return std::nullopt;
  // The k-th unproposed config, k uniform: one draw whatever the space's size.
  std::size_t k = std::uniform_int_distribution<std::size_t>(0, left - 1)(rng);
  for (std::size_t i = 0; i < proposed_.size(); ++i)
    if (!proposed_[i] && k-- == 0) return i;
  return std::nullopt;
}

}  // namespace ktune::detail
