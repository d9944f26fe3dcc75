#pragma once
// Winner: one problem's winner as the core decided it (DESIGN.md, "Trust rules"). The pages take
// it from a live run's ProblemResult or a reopened run's results.json and never crown a trial of
// their own choosing, so each shows the config and the number that the CLI summary,
// results.json and the registry show; the search's own number stays beside it, labelled.
#include <QIcon>
#include <QString>
#include <string>
#include <vector>

#include "ktune/run_store.h"
#include "ktune/tuner.h"

namespace ktune::gui {

struct Winner {
  std::string problemKey;  // Problem::key(), as the trials carry it
  Config config;
  Stats stats;    // the numbers it was chosen by: its re-measure's when choice.by is Remeasure
  Choice choice;  // how; choice.search holds its search trial's own numbers
  double tflops = 0;
  std::vector<Remeasured> round;  // the configs it was re-measured against, itself included
  Conditions conditions;          // the device's while `stats` were measured; empty: not read

  static Winner of(const ProblemResult& result);  // result.best must hold a trial
  static Winner of(const ResultEntry& entry);

  bool flagged() const { return choice.flags.any(); }
  // "re-measured 14.97 µs (search 13.89 µs)", or "13.89 µs in the search (not re-measured)";
  // "..., at 1425 MHz, 690 W, clock limited" where the device's conditions were read.
  QString numberText() const;
  // describe_flags' sentences, one a line; empty when nothing is flagged.
  QString flagsText() const;
  // A tooltip's worth: numberText, the re-measure round and flagsText.
  QString describe() const;
  // A star, or a warning sign when flagged.
  QIcon icon() const;
};

// "re-measure" or "search": which measurement a winner's number is.
QString chosenByText(ChosenBy by);

// The winners of a run's results.json, in its order.
std::vector<Winner> winnersOf(const RunResults& results);

}  // namespace ktune::gui
