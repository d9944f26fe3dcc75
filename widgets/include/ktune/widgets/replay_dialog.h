#pragma once
// File → Replay a Recorded Run: which run folder answers, which strategy proposes (with its
// budget and seed), and how long each recorded answer takes so the search can be watched on the
// Run and Landscape pages as a live run is (ReplayBackend::set_pace_ms).
#include <QDialog>

#include "ktune/strategy.h"

class QComboBox;
class QDialogButtonBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace ktune {
class ReplayBackend;
}

namespace ktune::gui {

struct ReplayChoice {
  QString runDir;
  StrategySpec strategy;
  double paceMs = 0;
};

// The Run page's title of a replay: the recorded run, how many configs it recorded over all its
// shapes, the strategy and its seed.
QString replayTitle(const ReplayBackend& backend, const StrategySpec& strategy);

class ReplayDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ReplayDialog(QWidget* parent = nullptr);

  void setChoice(const ReplayChoice& choice);
  ReplayChoice choice() const;
  // Why the choice cannot be replayed (no folder, not a run, an unknown strategy), or empty.
  QString problem() const;

 private:
  void check();

  QLineEdit* runDir_;
  QComboBox* strategy_;
  QSpinBox* budget_;
  QSpinBox* seed_;
  QDoubleSpinBox* pace_;
  QLabel* message_;
  QDialogButtonBox* buttons_;
};

}  // namespace ktune::gui
