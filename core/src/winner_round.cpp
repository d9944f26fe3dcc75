#include "winner_round.h"

#include <algorithm>

#include "ktune/error.h"

namespace ktune::detail {

namespace {

void log(TuneObserver& observer, std::string message) { observer.on_event(event::Log{std::move(message)}); }

// The baseline alone, or paired with the search's best (measure_pair): the speedup then compares
// two numbers taken under the same clocks. A failing baseline is a note, not a failed run.
void pair_baseline(ProblemSession& session, MeasureSettings settings, ProblemResult& result, TuneObserver& observer) {
  settings.slow_abort = false;
  try {
    auto base = session.prepare_baseline();
    if (!base) return;
    result.baseline_name = session.baseline_name();
    auto sample_base = [&](const SampleRequest& r) { return session.sample(*base, r); };
    if (!result.best) {
      result.baseline = measure(settings, sample_base, std::nullopt).stats;
      result.baseline_conditions = session.take_conditions(*base);
      return;
    }
    auto best = session.prepare(result.best->config);
    const auto [b, a] = measure_pair(
        settings, [&](const SampleRequest& r) { return session.sample(*best, r); }, sample_base);
    result.best_paired = b.stats;
    result.baseline = a.stats;
    result.baseline_conditions = session.take_conditions(*base);
  } catch (const RunError&) {
    throw;
  } catch (const std::exception& e) {
    log(observer, "baseline " + session.baseline_name() + " failed on " + result.problem.key() + ": " + e.what());
  }
}

// The configs worth timing again: the search's best `top`, when that is two or more or when the
// search's best alone did not reach the noise target (it cannot win on that number).
std::vector<Trial> contenders(std::vector<Trial> ok, int top, const ProblemResult& result) {
  const auto k = static_cast<std::size_t>(std::max(0, top));
  if (k < 2 || ok.empty()) return {};
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Trial& a, const Trial& b) { return a.stats.median_ns < b.stats.median_ns; });
  if (ok.size() > k) ok.resize(k);
  if (ok.size() < 2 && !result.choice.flags.noisy) return {};
  return ok;
}

// Index of the winner among `outs`: the fastest that reached the noise target, else the fastest.
std::size_t fastest(const std::vector<MeasureOutcome>& outs, double noise_target) {
  std::optional<std::size_t> quiet, any;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const double m = outs[i].stats.median_ns;
    if (!any || m < outs[*any].stats.median_ns) any = i;
    if (robust_rel_error(outs[i].samples_ns) <= noise_target && (!quiet || m < outs[*quiet].stats.median_ns)) quiet = i;
  }
  return quiet ? *quiet : *any;
}

struct Round {
  std::vector<Trial> trials;
  std::vector<std::unique_ptr<PreparedKernel>> kernels;
  std::unique_ptr<PreparedKernel> baseline;
};

Round prepare_round(ProblemSession& session, std::vector<Trial> candidates, const std::string& pkey,
                    TuneObserver& observer) {
  Round round;
  for (auto& t : candidates) {
    try {
      round.kernels.push_back(session.prepare(t.config));
      round.trials.push_back(std::move(t));
    } catch (const TrialFailure& e) {
      log(observer, "re-measure of " + pkey + ": " + t.config.key() + " failed to prepare again: " + e.what());
    }
  }
  try {
    round.baseline = session.prepare_baseline();
  } catch (const RunError&) {
    throw;
  } catch (const std::exception& e) {
    log(observer, "baseline " + session.baseline_name() + " failed on " + pkey + ": " + e.what());
  }
  return round;
}

// Times the round in alternation and crowns its winner in `result`.
void run_round(ProblemSession& session, MeasureSettings settings, Round& round, double flops, double bytes,
               ProblemResult& result, TuneObserver& observer) {
  settings.slow_abort = false;
  std::vector<Sampler> samplers;
  for (auto& kernel : round.kernels)
    samplers.push_back([&session, k = kernel.get()](const SampleRequest& r) { return session.sample(*k, r); });
  if (round.baseline)
    samplers.push_back([&session, k = round.baseline.get()](const SampleRequest& r) { return session.sample(*k, r); });
  std::vector<MeasureOutcome> outs = measure_alternating(settings, samplers);
  if (round.baseline) {
    result.baseline_name = session.baseline_name();
    result.baseline = outs.back().stats;
    result.baseline_conditions = session.take_conditions(*round.baseline);
    outs.pop_back();
  }
  std::vector<Conditions> conditions;
  for (std::size_t i = 0; i < round.trials.size(); ++i) {
    conditions.push_back(session.take_conditions(*round.kernels[i]));
    result.remeasured.push_back(
        {round.trials[i].config, round.trials[i].stats.median_ns, outs[i].stats, outs[i].samples_ns, conditions[i]});
  }
  const std::size_t w = fastest(outs, settings.noise_target);
  Trial winner = round.trials[w];
  const bool changed = !(winner.config == result.best->config);
  result.choice.by = ChosenBy::Remeasure;
  result.choice.trial_id = winner.id;
  result.choice.search = winner.stats;
  result.choice.flags = judge_winner(outs[w].samples_ns, ChosenBy::Remeasure, winner.stats, settings.noise_target);
  winner.stats = outs[w].stats;
  winner.samples_ns = outs[w].samples_ns;
  // Its time is the re-measure's now, and so are the conditions it was taken under.
  replace_conditions(winner.metrics, conditions[w]);
  set_rates(winner, flops, bytes);
  if (round.baseline) result.best_paired = winner.stats;
  result.best = std::move(winner);
  log(observer, "re-measured the best " + std::to_string(round.trials.size()) + " of " + result.problem.key() +
                    " in alternation: " + result.best->config.key() +
                    (changed ? " wins, not the search's best: " : " stays the best: ") +
                    format_ns(result.best->stats.median_ns) + " (search " + format_ns(result.choice.search.median_ns) +
                    ")" + (conditions[w].empty() ? "" : ", at " + describe(conditions[w])));
}

}  // namespace

void decide_winner(ProblemSession& session, const MeasureSettings& measure, std::vector<Trial> ok, double flops,
                   double bytes, ProblemResult& result, TuneObserver& observer) {
  if (!result.best) {
    pair_baseline(session, measure, result, observer);
    return;
  }
  const std::string pkey = result.problem.key();
  bool remeasured = false;
  if (auto candidates = contenders(std::move(ok), measure.remeasure_top, result); !candidates.empty()) {
    Round round = prepare_round(session, std::move(candidates), pkey, observer);
    try {
      if (!round.trials.empty()) {
        run_round(session, measure, round, flops, bytes, result, observer);
        remeasured = true;
      }
    } catch (const RunError&) {
      throw;
    } catch (const std::exception& e) {
      result.remeasured.clear();
      result.baseline.reset();
      log(observer, "re-measure of " + pkey + " failed, the search's best stands: " + e.what());
    }
  }
  if (!remeasured) pair_baseline(session, measure, result, observer);
  for (const auto& line : describe_flags(pkey, result.best->stats, result.choice)) log(observer, "warning: " + line);
}

}  // namespace ktune::detail
