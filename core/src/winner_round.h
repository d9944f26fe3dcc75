#pragma once
// The end of a problem's search: the re-measure round that picks its winner and the number it is
// chosen by, with the baseline timed in the same round.
#include <vector>

#include "ktune/backend.h"
#include "ktune/tuner.h"

namespace ktune::detail {

// `result.best` holds the search's best on entry, `result.choice` its search_choice(). The best
// `remeasure_top` ok configs of `ok` are timed again in alternation, with the baseline when the
// session has one; the fastest of those that reached the noise target wins (the fastest of all when
// none did), with its re-measured stats and samples, and result.choice says so. Nothing is recorded
// as a trial (the journal keeps one row per config; resume replays it). With re-measuring off
// (fewer than two to time, unless the search's best alone is noisy), the search's best stands with
// its own numbers and the baseline is paired with it. A config or baseline that fails now is left
// out with a note; a RunError propagates. `flops` and `bytes` (the family's counts) give TFLOP/s
// and GB/s.
void decide_winner(ProblemSession& session, const MeasureSettings& measure, std::vector<Trial> ok, double flops,
                   double bytes, ProblemResult& result, TuneObserver& observer);

}  // namespace ktune::detail
