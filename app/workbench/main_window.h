#pragma once
// The workbench's main window: pages named after the user's steps (Setup, Run, Trials,
// Landscape, Analyse, Apply), menus, shortcuts and settings. It wires the ktune_widgets objects together
// and holds no tuning or model logic of its own.
#include <QMainWindow>
#include <memory>
#include <vector>

#include "ktune/backend.h"

class QListWidget;
class QMenu;
class QStackedWidget;

namespace ktune {
struct TuneRequest;
}
namespace ktune::gui {
struct ReplayChoice;
struct RunTarget;
class AnalysePage;
class DiffPage;
class LandscapePage;
class RunController;
class RunDocument;
class RunPage;
class SetupPage;
class TrialsPage;
}  // namespace ktune::gui

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Page { SetupPageIndex, RunPageIndex, TrialsPageIndex, LandscapePageIndex, AnalysePageIndex, ApplyPageIndex };

  // `useSettings` false: start from defaults and write nothing back (screenshots, tests).
  explicit MainWindow(bool useSettings = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  void showPage(Page page);
  void openRun(const QString& dir);
  void loadSession(const QString& file);
  // File → Import → Kernel Tuner cache: a run folder under the runs folder, then opened.
  void importKernelTunerCache(const QString& file);
  void startRun();
  // A strategy searches a recorded run's landscape (ReplayBackend), shown as a live run.
  void replayRun(const ktune::gui::ReplayChoice& choice);
  ktune::gui::RunDocument* document() const { return document_; }
  ktune::gui::RunController* controller() const { return controller_; }
  ktune::gui::DiffPage* diffPage() const { return diffPage_; }
  ktune::gui::SetupPage* setupPage() const { return setupPage_; }
  ktune::gui::LandscapePage* landscapePage() const { return landscapePage_; }
  ktune::gui::AnalysePage* analysePage() const { return analysePage_; }
  ktune::gui::TrialsPage* trialsPage() const { return trialsPage_; }
  // Errors go to a message box normally, to stderr when running headless for a screenshot.
  void setReportErrorsToStderr(bool on) { errorsToStderr_ = on; }

 signals:
  void errorShown(const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void wire();
  void showError(const QString& title, const QString& message);
  void onRunOpened();
  void resumeRun();
  void beginRun(ktune::gui::RunTarget target, const ktune::TuneRequest& request, const QString& title);
  // False (and says why) while the Apply page re-measures on the device.
  bool deviceFree();
  void exportRun(bool json);
  void exportCharts();
  void exportRegistryAsAiter();
  void addRecentRun(const QString& dir);
  void refreshRecentRuns();

  bool useSettings_;
  bool errorsToStderr_ = false;
  std::vector<std::unique_ptr<ktune::Backend>> backends_;
  ktune::gui::RunDocument* document_;
  ktune::gui::RunController* controller_;
  ktune::gui::SetupPage* setupPage_;
  ktune::gui::RunPage* runPage_;
  ktune::gui::TrialsPage* trialsPage_;
  ktune::gui::LandscapePage* landscapePage_;
  ktune::gui::AnalysePage* analysePage_;
  ktune::gui::DiffPage* diffPage_;
  QListWidget* nav_;
  QStackedWidget* stack_;
  QMenu* recentMenu_ = nullptr;
  QAction* resumeAction_ = nullptr;
};
