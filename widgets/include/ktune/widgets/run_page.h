#pragma once
// Run page: Start / Pause / Stop, progress (configs measured of those to measure, trials per
// second, ETA, elapsed), measured, pruned and failed counts apart, the winner of each shape with
// the number it was chosen by (the search's best so far, labelled as such, until the shape's
// search ends), a warning for flagged winners, counts per status, and the run's log. Counts and
// winners follow the trials model, so a live run and a reopened one read the same.
#include <QAction>
#include <QWidget>
#include <map>

#include "ktune/tuner.h"
#include "ktune/widgets/qt_types.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QTableWidget;

namespace ktune::gui {

class KeyLabels;
class TrialsModel;

class RunPage : public QWidget {
  Q_OBJECT
 public:
  explicit RunPage(TrialsModel* model, QWidget* parent = nullptr);

  QAction* startAction() const { return start_; }
  QAction* pauseAction() const { return pause_; }
  QAction* stopAction() const { return stop_; }

  // State of the buttons: idle (Start enabled) or running (Pause, Stop enabled).
  void setRunning(bool running);
  void setPaused(bool paused);
  void setRunTitle(const QString& title);

  // Pruned: from the run's pruning record (configs that never ran), not from listed rows.
  std::uint64_t statusCount(TrialStatus status) const;
  std::uint64_t measuredCount() const;  // every trial that ran, whatever its status
  std::uint64_t failedCount() const;    // measured and failed: neither ok nor slow_abort
  int shapesWithBest() const { return static_cast<int>(best_.size()); }
  enum WinnerColumn {
    ShapeColumn,
    ConfigColumn,
    MedianColumn,  // the number the winner was chosen by
    ChosenByColumn,
    SearchColumn,  // the winner's search median
    TflopsColumn,
    TrialsColumn,
    ColumnCount
  };
  QTableWidget* winnerTable() const { return bestTable_; }
  // The flagged winners' warnings, one a line; empty when none is flagged.
  QString flagWarning() const;

 public slots:
  void onRunStarted(const ktune::event::RunStarted& info);
  void onProblemStarted(const ktune::event::ProblemStarted& info);
  void onProgress(const ktune::event::Progress& progress);
  void onFinished(const ktune::RunSummary& summary);
  void appendLog(const QString& message);

 private:
  void countRows(int first, int last);
  void recountAll();
  void refreshTables();
  void fillWinnerRow(int row, const std::string& key, const KeyLabels& labels);
  void refreshFlagBanner();

  TrialsModel* model_;
  QAction* start_;
  QAction* pause_;
  QAction* stop_;
  QLabel* title_;
  QLabel* problem_;
  QProgressBar* progress_;
  QLabel* measured_;
  QLabel* pruned_;
  QLabel* failed_;
  QLabel* rate_;
  QLabel* eta_;
  QLabel* elapsed_;
  QTableWidget* statusTable_;
  QTableWidget* bestTable_;
  QLabel* flagBanner_;
  QPlainTextEdit* log_;
  std::map<TrialStatus, std::uint64_t> counts_;  // trials that ran, by status
  struct Best {
    double median_ns;
    int row;
  };
  // The search's best so far by problem key, shown until the shape's winner is known.
  std::map<std::string, Best, KeyLess> best_;
  std::map<std::string, int, KeyLess> trialsPerShape_;
};

}  // namespace ktune::gui
