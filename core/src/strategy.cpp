#include "ktune/strategy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "ktune/error.h"
#include "strategy_factories.h"

namespace ktune {

namespace {

// Hands out a fixed order of configs in batches; exhaustive and random differ only in the order
// and how many they keep.
class OrderedStrategy : public Strategy {
 public:
  std::vector<Config> next(std::size_t max) override {
    std::vector<Config> out;
    while (out.size() < max && pos_ < order_.size()) out.push_back(order_[pos_++]);
    return out;
  }
  std::size_t planned() const override { return order_.size(); }

 protected:
  std::vector<Config> order_;
  std::size_t pos_ = 0;
};

class ExhaustiveStrategy : public OrderedStrategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void reset(std::vector<Config> valid) override {
    order_ = std::move(valid);
    pos_ = 0;
  }
};

class RandomStrategy : public OrderedStrategy {
 public:
  RandomStrategy(std::size_t budget, std::uint64_t seed) : budget_(budget), seed_(seed) {}
  std::string name() const override { return "random"; }
  void reset(std::vector<Config> valid) override {
    // A fresh engine per problem: the sample of a problem does not depend on the ones before.
    std::mt19937_64 rng(seed_);
    std::shuffle(valid.begin(), valid.end(), rng);
    if (budget_ > 0 && valid.size() > budget_) valid.resize(budget_);
    order_ = std::move(valid);
    pos_ = 0;
  }

 private:
  std::size_t budget_;
  std::uint64_t seed_;
};

class FilteredStrategy : public OrderedStrategy {
 public:
  FilteredStrategy(std::unique_ptr<Strategy> inner, std::function<bool(const Config&)> keep)
      : inner_(std::move(inner)), keep_(std::move(keep)) {}
  std::string name() const override { return inner_->name(); }
  void reset(std::vector<Config> valid) override {
    inner_->reset(std::move(valid));
    order_.clear();
    pos_ = 0;
    for (auto batch = inner_->next(256); !batch.empty(); batch = inner_->next(256))
      for (auto& c : batch)
        if (keep_(c)) order_.push_back(std::move(c));
  }

 private:
  std::unique_ptr<Strategy> inner_;
  std::function<bool(const Config&)> keep_;
};

// Model-guided local search (iterated hill climbing, as Kernel Tuner's greedy strategies do):
// a few random configs seed it, then it measures the untried neighbours of the best config so
// far (one parameter moved to an adjacent candidate value), and restarts from a random untried
// config when the best has no untried neighbour left. Good configs cluster, so it reaches the
// best of large spaces in a fraction of the trials.
class LocalSearchStrategy : public Strategy {
 public:
  LocalSearchStrategy(std::size_t budget, std::uint64_t seed) : budget_(budget), seed_(seed) {}
  std::string name() const override { return "local"; }
  void reset(std::vector<Config> valid) override {
    valid_ = std::move(valid);
    index_.clear();
    for (std::size_t i = 0; i < valid_.size(); ++i) index_[valid_[i].key()] = i;
    // Candidate values of each parameter, in order, as seen in the valid configs.
    values_.clear();
    for (const auto& c : valid_)
      for (const auto& [k, v] : c.values()) values_[k].insert(v);
    tried_.assign(valid_.size(), false);
    handed_ = 0;
    best_.reset();
    best_ns_ = std::numeric_limits<double>::infinity();
    rng_.seed(seed_);
  }
  std::vector<Config> next(std::size_t max) override {
    std::vector<Config> out;
    const std::size_t limit = planned();
    const std::size_t seeds = std::min<std::size_t>(limit, std::max<std::size_t>(4, limit / 10));
    while (out.size() < max && handed_ < limit) {
      std::optional<std::size_t> pick;
      if (handed_ >= seeds && best_) pick = untried_neighbour(*best_);
      if (!pick) pick = random_untried();
      if (!pick) break;
      tried_[*pick] = true;
      ++handed_;
      out.push_back(valid_[*pick]);
      // Neighbours of a config not measured yet are unknown: a batch explores around one best.
      if (handed_ > seeds && out.size() >= 4) break;
    }
    return out;
  }
  void report(const Trial& t) override {
    if (t.status != TrialStatus::Ok || t.stats.median_ns >= best_ns_) return;
    if (auto it = index_.find(t.config.key()); it != index_.end()) {
      best_ = it->second;
      best_ns_ = t.stats.median_ns;
    }
  }
  std::size_t planned() const override { return budget_ > 0 ? std::min(budget_, valid_.size()) : valid_.size(); }

 private:
  std::optional<std::size_t> untried_neighbour(std::size_t from) {
    const Config& base = valid_[from];
    for (const auto& [name, value] : base.values()) {
      const auto& vals = values_[name];
      auto it = vals.find(value);
      for (auto nb : {it == vals.begin() ? vals.end() : std::prev(it), std::next(it)}) {
        if (nb == vals.end()) continue;
        Config c = base;
        c.set(name, *nb);
        auto found = index_.find(c.key());
        if (found != index_.end() && !tried_[found->second]) return found->second;
      }
    }
    return std::nullopt;
  }
  std::optional<std::size_t> random_untried() {
    std::vector<std::size_t> left;
    for (std::size_t i = 0; i < tried_.size(); ++i)
      if (!tried_[i]) left.push_back(i);
    if (left.empty()) return std::nullopt;
    return left[std::uniform_int_distribution<std::size_t>(0, left.size() - 1)(rng_)];
  }

  std::size_t budget_;
  std::uint64_t seed_;
  std::vector<Config> valid_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::set<ParamValue>> values_;
  std::vector<bool> tried_;
  std::size_t handed_ = 0;
  std::optional<std::size_t> best_;
  double best_ns_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace

double parse_duration_s(const std::string& text) {
  const auto bad = [&]() {
    return InputError("time budget '" + text +
                      "' is not a duration: give seconds (90), or a number with s, m or h (60s, 5m, 1.5h)");
  };
  if (text.empty()) throw bad();
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  // stod accepts leading spaces, "inf" and "nan": none is a budget.
  if (std::isspace(static_cast<unsigned char>(text.front())) || !std::isfinite(value)) throw bad();
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else
    throw bad();
  if (value < 0)
    throw InputError("time budget '" + text + "' is negative; give 0 for no limit or a duration: 90, 60s, 5m, 1.5h");
  return value * scale;
}

std::vector<std::string> strategy_names() { return {"exhaustive", "random", "local", "genetic", "bayes"}; }

std::unique_ptr<Strategy> filtered_strategy(std::unique_ptr<Strategy> inner, std::function<bool(const Config&)> keep) {
  return std::make_unique<FilteredStrategy>(std::move(inner), std::move(keep));
}

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec) {
  if (spec.kind == "exhaustive") return std::make_unique<ExhaustiveStrategy>();
  if (spec.kind == "random") return std::make_unique<RandomStrategy>(spec.budget, spec.seed);
  if (spec.kind == "local") return std::make_unique<LocalSearchStrategy>(spec.budget, spec.seed);
  if (spec.kind == "genetic") return detail::make_genetic_strategy(spec.budget, spec.seed);
  if (spec.kind == "bayes") return detail::make_bayes_strategy(spec.budget, spec.seed);
  throw InputError("unknown strategy '" + spec.kind + "' (choose exhaustive, random, local, genetic or bayes)");
}

}  // namespace ktune
