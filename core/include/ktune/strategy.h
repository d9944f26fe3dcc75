#pragma once
// Strategy: proposes the next configs to measure from the space's valid configs.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/trial.h"

namespace ktune {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Called once per problem with that problem's valid configs.
  virtual void reset(std::vector<Config> valid) = 0;
  // Up to `max` configs to measure next; empty when done. Model-guided strategies use the
  // trials reported so far to choose.
  virtual std::vector<Config> next(std::size_t max) = 0;
  virtual void report(const Trial&) {}
  // How many configs this strategy will try for the current problem (for progress and ETA).
  virtual std::size_t planned() const = 0;
};

struct StrategySpec {
  // exhaustive | random | local (hill climbing) | genetic | bayes (Gaussian process, expected improvement)
  std::string kind = "exhaustive";
  std::size_t budget = 0;  // configs per problem (0 = all); exhaustive ignores it
  std::uint64_t seed = 0;
  // Seconds of search per problem (0 = no limit), counted over every session of a resumed run
  // (the tuner enforces it; strategies do not see time, so their choices stay deterministic).
  double time_budget_s = 0;
};

// "60s", "5m", "1h", "90" (seconds; decimals allowed) -> seconds. Throws InputError naming the
// text and the accepted forms for anything else, a negative or non-finite value included.
double parse_duration_s(const std::string& text);

nlohmann::json to_json(const StrategySpec& s);
// Missing keys keep `base`; wrong types are an InputError naming the key ("strategy.budget: ...").
StrategySpec strategy_spec_from_json(const nlohmann::json& j, StrategySpec base = {});

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec);  // throws InputError
// The configs of `inner`'s whole order (asked for up front) that `keep` accepts, in that order.
// Only for strategies whose order does not depend on reports (exhaustive, random).
std::unique_ptr<Strategy> filtered_strategy(std::unique_ptr<Strategy> inner, std::function<bool(const Config&)> keep);
std::vector<std::string> strategy_names();

}  // namespace ktune
