#pragma once
// DiscreteSpace: a problem's valid configs as points of a grid, for the strategies that reason
// about neighbourhoods (genetic, bayes): each config as one candidate-value index per parameter,
// and a look-up from such a point back to the valid config, if there is one.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "ktune/config.h"
#include "ktune/trial.h"

namespace ktune::detail {

using Point = std::vector<int>;  // candidate-value index per parameter, in the configs' order

class DiscreteSpace {
 public:
  void reset(std::vector<Config> valid);

  std::size_t size() const { return valid_.size(); }
  std::size_t dimensions() const { return values_.size(); }
  const Config& config(std::size_t i) const { return valid_[i]; }
  const Point& point(std::size_t i) const { return points_[i]; }
  // Candidate values of parameter `d`, sorted (as seen in the valid configs).
  std::size_t levels(std::size_t d) const { return values_[d].size(); }
  std::optional<std::size_t> find(const Point& p) const;
  std::optional<std::size_t> find(const Config& c) const;
  // Coordinate d of config i scaled to [0, 1] (0.5 for a parameter with one value).
  double normalized(std::size_t i, std::size_t d) const;

 private:
  std::vector<Config> valid_;
  std::vector<Point> points_;
  std::vector<std::vector<ParamValue>> values_;
  std::map<Point, std::size_t> index_;
};

// What a strategy learns from a trial: its median in ns when it ran (ok, or stopped early as
// clearly slower than the best: slow_abort keeps the median of the samples it took), nullopt
// when the config failed (compile, launch, wrong result, crash, timeout).
std::optional<double> trial_time(const Trial& t);

// The configs a strategy has proposed and what came back, by valid-config index.
class Evaluations {
 public:
  void reset(std::size_t n);
  void propose(std::size_t i) {
    if (!proposed_[i]) ++handed_;
    proposed_[i] = true;
  }
  bool proposed(std::size_t i) const { return proposed_[i]; }
  std::size_t handed() const { return handed_; }
  void record(std::size_t i, const Trial& t);
  bool known(std::size_t i) const { return known_[i]; }
  std::optional<double> time(std::size_t i) const { return time_[i]; }
  // Known indices in the order their results came back.
  const std::vector<std::size_t>& order() const { return order_; }
  // A uniformly chosen config not yet proposed; nullopt when every one was.
  std::optional<std::size_t> random_unproposed(std::mt19937_64& rng) const;

 private:
  std::vector<bool> proposed_, known_;
  std::vector<std::optional<double>> time_;
  std::vector<std::size_t> order_;
  std::size_t handed_ = 0;
};

}  // namespace ktune::detail
