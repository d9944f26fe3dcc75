#include "ktune/strategy.h"

#include <algorithm>
#include <random>

#include "ktune/error.h"

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

}  // namespace

std::vector<std::string> strategy_names() { return {"exhaustive", "random"}; }

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec) {
  if (spec.kind == "exhaustive") return std::make_unique<ExhaustiveStrategy>();
  if (spec.kind == "random") return std::make_unique<RandomStrategy>(spec.budget, spec.seed);
  throw InputError("unknown strategy '" + spec.kind + "' (choose exhaustive or random)");
}

}  // namespace ktune
