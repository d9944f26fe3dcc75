#pragma once
// The winner of one problem and the number it was chosen by (DESIGN.md, "Trust rules"). After a
// search, its best few configs are timed again in alternation; the fastest of those paired numbers
// wins, and that number, not the search's, is the winner's in every view and file. The search's
// number stays beside it, labelled. What makes the number doubtful is flagged in every view and
// file, and `apply` refuses a flagged entry unless asked.
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/stats.h"
#include "ktune/trial.h"

namespace ktune {

enum class ChosenBy {
  Search,     // the search's own timing: nothing was re-measured (--remeasure-top 0
              // or 1)
  Remeasure,  // the paired re-measure of the search's best few
};
const char* to_string(ChosenBy by);                    // "search", "remeasure"
const char* describe(ChosenBy by);                     // "search", "re-measure": as a person reads it
ChosenBy chosen_by_from_string(const std::string& s);  // throws InputError

// A re-measure that moves the winner's median by more than this from its search median is flagged:
// one of the two numbers is not what the config does (a loaded machine, a lucky sample, a kernel
// whose time depends on what ran before it).
inline constexpr double kRemeasureDisagreement = 0.10;

struct WinnerFlags {
  bool noisy = false;      // the samples it was chosen by did not reach the run's
                           // noise target
  bool disagrees = false;  // re-measure and search medians differ by more than
                           // kRemeasureDisagreement
  bool any() const { return noisy || disagrees; }
  // "noisy", "remeasure_disagrees": the spellings of results.json and the registry.
  std::vector<std::string> names() const;
  static WinnerFlags from_names(const std::vector<std::string>& names);  // throws InputError
  friend bool operator==(const WinnerFlags&, const WinnerFlags&) = default;
};

// How a winner was chosen, beside the number it was chosen by (kept where the winner's stats are:
// ProblemResult::best, ResultEntry::stats).
struct Choice {
  ChosenBy by = ChosenBy::Search;
  std::int64_t trial_id = -1;  // the winner's search trial in trials.csv; -1 when unknown
  Stats search;                // that trial's numbers
  WinnerFlags flags;
};

// The flags of a winner chosen by `chosen_samples` whose search trial measured `search`, in a run
// whose noise target is `noise_target` (held against robust_rel_error, as the sampling loop holds
// it).
WinnerFlags judge_winner(const std::vector<double>& chosen_samples, ChosenBy by, const Stats& search,
                         double noise_target);

// The choice of a winner that the search's own timing decided (nothing re-measured): `winner` is
// its search trial.
Choice search_choice(const Trial& winner, double noise_target);

// One sentence per flag, naming the problem and both numbers, for a person to read: "M=16 N=512
// K=512: re-measured 224.00 us, 15.96 us in the search (+1303 %)". Empty without flags.
std::vector<std::string> describe_flags(const std::string& problem_key, const Stats& chosen, const Choice& choice);

// "12 ns", "12.30 us", "1.20 ms", "2.00 s": one spelling of a time for every text ktune prints.
std::string format_ns(double ns);

}  // namespace ktune
