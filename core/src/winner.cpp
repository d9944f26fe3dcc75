#include "ktune/winner.h"

#include <cmath>
#include <cstdio>

#include "ktune/error.h"

namespace ktune {

namespace {
constexpr const char* kNoisy = "noisy";
constexpr const char* kDisagrees = "remeasure_disagrees";
}  // namespace

const char* to_string(ChosenBy by) { return by == ChosenBy::Remeasure ? "remeasure" : "search"; }

const char* describe(ChosenBy by) { return by == ChosenBy::Remeasure ? "re-measure" : "search"; }

ChosenBy chosen_by_from_string(const std::string& s) {
  if (s == "search") return ChosenBy::Search;
  if (s == "remeasure") return ChosenBy::Remeasure;
  throw InputError("'" + s + "' is not how a winner is chosen: expected \"search\" or \"remeasure\"");
}

std::vector<std::string> WinnerFlags::names() const {
  std::vector<std::string> out;
  if (noisy) out.emplace_back(kNoisy);
  if (disagrees) out.emplace_back(kDisagrees);
  return out;
}

WinnerFlags WinnerFlags::from_names(const std::vector<std::string>& names) {
  WinnerFlags f;
  for (const auto& n : names) {
    if (n == kNoisy)
      f.noisy = true;
    else if (n == kDisagrees)
      f.disagrees = true;
    else
      throw InputError("unknown flag '" + n + "': expected \"" + kNoisy + "\" or \"" + kDisagrees + "\"");
  }
  return f;
}

WinnerFlags judge_winner(const std::vector<double>& chosen_samples, ChosenBy by, const Stats& search,
                         double noise_target) {
  WinnerFlags f;
  f.noisy = !(robust_rel_error(chosen_samples) <= noise_target);
  if (by == ChosenBy::Remeasure && search.median_ns > 0)
    f.disagrees = !(std::abs(summarize(chosen_samples).median_ns / search.median_ns - 1) <= kRemeasureDisagreement);
  return f;
}

Choice search_choice(const Trial& winner, double noise_target) {
  Choice c;
  c.trial_id = winner.id;
  c.search = winner.stats;
  c.flags = judge_winner(winner.samples_ns, ChosenBy::Search, winner.stats, noise_target);
  return c;
}

std::string format_ns(double ns) {
  char buf[32];
  if (ns < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else if (ns < 1e9)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::vector<std::string> describe_flags(const std::string& problem_key, const Stats& chosen, const Choice& choice) {
  std::vector<std::string> out;
  const char* what = choice.by == ChosenBy::Remeasure ? "re-measured" : "measured";
  if (choice.flags.disagrees) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%+.0f %%", (chosen.median_ns / choice.search.median_ns - 1) * 100);
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.0f %%", kRemeasureDisagreement * 100);
    out.push_back(problem_key + ": " + what + " " + format_ns(chosen.median_ns) + ", " +
                  format_ns(choice.search.median_ns) + " in the search (" + pct + "): the two disagree by more than " +
                  limit + ", one of them is not what the config does");
  }
  if (choice.flags.noisy)
    out.push_back(problem_key + ": " + what + " " + format_ns(chosen.median_ns) + " (std " + format_ns(chosen.std_ns) +
                  ", max " + format_ns(chosen.max_ns) + ", " + std::to_string(chosen.count) +
                  " samples): its samples did not reach the noise target, the number may "
                  "not hold");
  return out;
}

}  // namespace ktune
