#pragma once
// Which parameters matter for one shape: fANOVA (Hutter, Hoos & Leyton-Brown, "An Efficient
// Approach for Assessing Hyperparameter Importance", ICML 2014), the method Optuna's default
// importance evaluator uses. A random forest learns log latency from the configs of the shape's
// ok trials; each tree is a piecewise-constant function of the config whose variance over the
// space can be split exactly into one part per parameter (its main effect: how much the
// prediction moves with that parameter alone, averaged over every other parameter) and a rest
// (interactions). A parameter's importance is its main effect's share of the variance.
//
// Why fANOVA and not a forest's impurity importance: impurity importance counts how much the
// splits on a parameter reduced the error on the trials a search happened to measure, so it
// favours parameters with many values and follows where the search sampled most; fANOVA weighs
// every value of every parameter alike (the space as a grid of the values tried), so it answers
// "over the space, how much does this parameter move the time?". Log latency, so a parameter that
// doubles the time counts the same at 10 µs as at 10 ms.
//
// Seeded and deterministic: the same trials and options give the same numbers on every machine
// (the trees draw from a std::mt19937_64, never from a std:: distribution).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/trial.h"

namespace ktune {

struct ImportanceOptions {
  int trees = 64;      // as Optuna's FanovaImportanceEvaluator
  int max_depth = 64;  // as Optuna's
  std::uint64_t seed = 0;
  // Distinct configs the forest learns from; a run with more gives a seeded sample of this many.
  std::size_t max_configs = 4096;
};

// Fewer ok trials than this and nothing can be said.
inline constexpr std::size_t kMinImportanceTrials = 2;

struct ParameterImportance {
  std::string name;
  std::size_t values = 0;  // distinct values among the shape's ok trials
  // Integers and booleans have an order; strings (and a mix of kinds) are categories.
  bool ordered = true;
  // One value among the ok trials: it cannot have mattered here (its importance is 0).
  bool fixed() const { return values < 2; }
  // The main effect's share of the parameters' main effects, 0..1, summing to 1 over the
  // parameters (Optuna's normalisation): the ranking.
  double importance = 0;
  // The fraction of the log-latency variance this parameter explains on its own (fANOVA's
  // main effect), 0..1, averaged over the trees, and its standard deviation over them.
  double variance = 0;
  double variance_std = 0;
  // For ordered parameters Spearman's rank correlation of the value with latency, -1..1: > 0 when
  // larger values are slower. For strings the correlation ratio η of log latency, 0..1, which has
  // no sign because strings have no order. 0 for a fixed parameter.
  double correlation = 0;
};

struct ImportanceReport {
  enum class Status {
    Ok,
    NotEnoughTrials,  // fewer than kMinImportanceTrials ok trials with a time
    NoVariation,      // every ok trial's time is the same, or no parameter varies
  };
  Status status = Status::NotEnoughTrials;
  std::size_t trials = 0;   // ok trials of the shape with a time
  std::size_t configs = 0;  // distinct configs among them
  std::size_t learned = 0;  // configs the forest learned from (configs, or max_configs of them)
  // The sum of the parameters' `variance`: what main effects explain; the rest is interactions.
  double main_effects = 0;
  std::vector<ParameterImportance> parameters;  // in the order asked for
  // One sentence for a caption: what the numbers are, or why there are none.
  std::string message() const;
};

// fANOVA over the ok trials of `problem_key` (trials of other shapes are skipped; a trial lacking
// one of `parameters` too), each trial's search median as its latency. Configs measured more than
// once count once, at the mean of their log latencies.
ImportanceReport parameter_importance(const std::vector<Trial>& trials, const std::string& problem_key,
                                      const std::vector<std::string>& parameters,
                                      const ImportanceOptions& options = {});

}  // namespace ktune
