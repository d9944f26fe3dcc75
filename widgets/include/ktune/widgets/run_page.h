#pragma once
// Run page: Start / Pause / Stop, progress (done/total, trials per second, ETA, elapsed), the
// best config so far per shape, counts per status, and the run's log. Counts and bests follow
// the trials model, so a live run and a reopened one read the same.
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

  std::uint64_t statusCount(TrialStatus status) const;
  int shapesWithBest() const { return static_cast<int>(best_.size()); }

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

  TrialsModel* model_;
  QAction* start_;
  QAction* pause_;
  QAction* stop_;
  QLabel* title_;
  QLabel* problem_;
  QProgressBar* progress_;
  QLabel* rate_;
  QLabel* eta_;
  QLabel* elapsed_;
  QTableWidget* statusTable_;
  QTableWidget* bestTable_;
  QPlainTextEdit* log_;
  std::map<TrialStatus, std::uint64_t> counts_;
  struct Best {
    double median_ns;
    int row;
  };
  std::map<std::string, Best> best_;  // by problem key
  std::map<std::string, int> trialsPerShape_;
};

}  // namespace ktune::gui
