#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <cstdio>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/replay_backend.h"
#include "ktune/run_options.h"
#include "ktune/widgets/analyse_page.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/registry_export.h"
#include "ktune/widgets/replay_dialog.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/session.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/tune_worker.h"
#include "ktune/widgets/worker_panel.h"
#include "ktune/workload_rules.h"

using namespace ktune;
using namespace ktune::gui;

namespace {
constexpr int kMaxRecentRuns = 10;
}

MainWindow::MainWindow(bool useSettings, QWidget* parent)
    : QMainWindow(parent), useSettings_(useSettings), backends_(make_backends()) {
  setWindowTitle(tr("ktune workbench"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/ktune.svg")));
  document_ = new RunDocument(this);
  controller_ = new RunController(this);
  setupPage_ = new SetupPage(backends_);
  // `ktune-workbench worker` serves a backend over the worker protocol (main.cpp): Isolate.
  setupPage_->setWorkerProgram({QCoreApplication::applicationFilePath(), QStringLiteral("worker")});
  runPage_ = new RunPage(document_->trials());
  trialsPage_ = new TrialsPage(document_->trials());
  landscapePage_ = new LandscapePage(document_->trials());
  analysePage_ = new AnalysePage(document_->trials());
  diffPage_ = new DiffPage(document_);
  diffPage_->setBackends(&backends_);

  nav_ = new QListWidget;
  nav_->setIconSize(QSize(28, 28));
  nav_->setFixedWidth(120);
  nav_->setViewMode(QListView::IconMode);
  nav_->setMovement(QListView::Static);
  nav_->setSpacing(6);
  nav_->setGridSize(QSize(108, 64));
  stack_ = new QStackedWidget;
  const std::pair<QString, QString> pages[] = {
      {tr("Setup"), QStringLiteral("setup")},     {tr("Run"), QStringLiteral("run")},
      {tr("Trials"), QStringLiteral("trials")},   {tr("Landscape"), QStringLiteral("landscape")},
      {tr("Analyse"), QStringLiteral("analyse")}, {tr("Apply"), QStringLiteral("apply")}};
  for (const auto& [title, icon] : pages)
    new QListWidgetItem(QIcon(QStringLiteral(":/icons/%1.svg").arg(icon)), title, nav_);
  for (QWidget* page :
       std::initializer_list<QWidget*>{setupPage_, runPage_, trialsPage_, landscapePage_, analysePage_, diffPage_})
    stack_->addWidget(page);
  auto* central = new QWidget;
  auto* layout = new QHBoxLayout(central);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(nav_);
  layout->addWidget(stack_, 1);
  setCentralWidget(central);
  connect(nav_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);

  buildMenus();
  wire();
  showPage(SetupPageIndex);
  resize(1440, 900);
  if (useSettings_) {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    landscapePage_->restoreSettings(settings);
    analysePage_->restoreSettings(settings);
    showPage(static_cast<Page>(settings.value(QStringLiteral("window/page"), 0).toInt()));
  }
  refreshRecentRuns();
  statusBar()->showMessage(tr("Backends: %1").arg([this] {
    QStringList names;
    for (const auto& b : backends_) names << qstr(b->name());
    return names.join(QStringLiteral(", "));
  }()));
}

MainWindow::~MainWindow() = default;

void MainWindow::showPage(Page page) { nav_->setCurrentRow(static_cast<int>(page)); }

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(QIcon(QStringLiteral(":/icons/open.svg")), tr("&Open Run…"), this, [this] {
    const QString start =
        QSettings()
            .value(QStringLiteral("folders/runs"), QDir::current().filePath(QStringLiteral("tuning_runs")))
            .toString();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run folder"), start);
    if (!dir.isEmpty()) openRun(dir);
  });
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  QMenu* import = file->addMenu(tr("&Import"));
  import->addAction(tr("&Kernel Tuner cache…"), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Import a Kernel Tuner cache file"), {},
                                                   tr("Kernel Tuner cache (*.json);;All files (*)"));
  if (!f.isEmpty()) importKernelTunerCache(f);
})->setToolTip(tr("tune_kernel(..., cache=\"FILE\"), finished or still being written: becomes a run folder "
                    "under the Setup page's runs folder (ktune import kernel-tuner)"));
import->setToolTipsVisible(true);
file->addAction(tr("Re&play a Recorded Run…"), this,
                [this] {
                  ReplayDialog dialog(this);
                  if (document_->hasRun())
                    dialog.setChoice({qstr(document_->dir().string()), {"bayes", 50, 0, 0}, 100});
                  if (dialog.exec() == QDialog::Accepted) replayRun(dialog.choice());
                })
    ->setToolTip(tr("A strategy searches a recorded run's landscape, which answers instead of a device "
                    "(ktune tune --replay)"));
resumeAction_ = file->addAction(tr("&Resume Run"), this, &MainWindow::resumeRun);
resumeAction_->setEnabled(false);
resumeAction_->setToolTip(tr("Continue the opened run where it stopped; measured trials are kept"));
file->addSeparator();
file->addAction(QIcon(QStringLiteral(":/icons/open.svg")), tr("&Load Session…"), this, [this] {
  const QString f = QFileDialog::getOpenFileName(this, tr("Load session"), {}, tr("ktune session (*.json)"));
  if (!f.isEmpty()) loadSession(f);
});
file->addAction(QIcon(QStringLiteral(":/icons/save.svg")), tr("&Save Session…"), this,
                [this] {
                  const QString f = QFileDialog::getSaveFileName(
                      this, tr("Save session"), QStringLiteral("session.json"), tr("ktune session (*.json)"));
                  if (f.isEmpty()) return;
                  try {
                    setupPage_->saveSessionTo(f);
                    statusBar()->showMessage(tr("Session saved to %1").arg(f), 5000);
                  } catch (const std::exception& e) {
                    showError(tr("Cannot save the session"), QString::fromUtf8(e.what()));
                  }
                })
    ->setShortcut(QKeySequence::Save);
file->addSeparator();
QMenu* exports = file->addMenu(QIcon(QStringLiteral(":/icons/export.svg")), tr("&Export"));
QAction* exportCsv = exports->addAction(QIcon(QStringLiteral(":/icons/export.svg")), tr("&Trials as CSV…"), this,
                                        [this] { exportRun(false); });
exportCsv->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
exports->addAction(tr("Run as &JSON…"), this, [this] { exportRun(true); })
    ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
exports->addAction(tr("&Charts…"), this, &MainWindow::exportCharts);
exports->addAction(tr("Registry as &aiter Files…"), this, &MainWindow::exportRegistryAsAiter)
    ->setStatusTip(
        tr("Write a family's registry entries as aiter's tuned-config files (ktune registry export --format aiter)"));
file->addSeparator();
file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

QMenu* run = menuBar()->addMenu(tr("&Run"));
run->addAction(runPage_->startAction());
run->addAction(runPage_->pauseAction());
run->addAction(runPage_->stopAction());

QMenu* view = menuBar()->addMenu(tr("&View"));
for (int i = 0; i < nav_->count(); ++i) {
  QAction* a = view->addAction(nav_->item(i)->icon(), nav_->item(i)->text(), this,
                               [this, i] { showPage(static_cast<Page>(i)); });
  a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
}

QToolBar* bar = addToolBar(tr("Main"));
bar->setObjectName(QStringLiteral("mainToolBar"));
bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
bar->addAction(open);
bar->addAction(exportCsv);
bar->addSeparator();
bar->addAction(runPage_->startAction());
bar->addAction(runPage_->pauseAction());
bar->addAction(runPage_->stopAction());
}

void MainWindow::wire() {
  connect(runPage_->startAction(), &QAction::triggered, this, &MainWindow::startRun);
  connect(runPage_->pauseAction(), &QAction::toggled, controller_, &RunController::setPaused);
  connect(runPage_->stopAction(), &QAction::triggered, controller_, &RunController::stop);
  connect(controller_, &RunController::pausedChanged, runPage_, &RunPage::setPaused);
  connect(controller_, &RunController::runStarted, runPage_, &RunPage::onRunStarted);
  connect(controller_, &RunController::problemStarted, runPage_, &RunPage::onProblemStarted);
  connect(controller_, &RunController::progress, runPage_, &RunPage::onProgress);
  connect(controller_, &RunController::logMessage, runPage_, &RunPage::appendLog);
  connect(controller_, &RunController::trialsAvailable, document_->trials(), &TrialsModel::appendTrials);
  connect(controller_, &RunController::problemFinished, document_->trials(), &TrialsModel::addResult);
  connect(controller_, &RunController::runStarted, landscapePage_,
          [this](const event::RunStarted& info) { landscapePage_->setDevice(info.device); });
  // Re-measuring on the Apply page and tuning would time each other: one at a time.
  connect(controller_, &RunController::runStarted, diffPage_,
          [this] { diffPage_->setDeviceBusy(tr("a tune is running; stop it or wait for it to end")); });
  connect(controller_, &RunController::finished, diffPage_, [this] { diffPage_->setDeviceBusy({}); });
  connect(controller_, &RunController::failed, diffPage_, [this] { diffPage_->setDeviceBusy({}); });
  connect(controller_, &RunController::finished, this, [this](const RunSummary& summary) {
    runPage_->onFinished(summary);
    runPage_->setRunning(false);
    document_->finishLiveRun();
    if (!summary.run_dir.empty()) addRecentRun(qstr(summary.run_dir.string()));
    statusBar()->showMessage(summary.cancelled ? tr("Run stopped.")
                                               : tr("Run finished: compare and apply it on the Apply page."));
  });
  connect(controller_, &RunController::failed, this, [this](const QString& message) {
    runPage_->setRunning(false);
    runPage_->appendLog(message);
    showError(tr("The run stopped"), message);
  });

  connect(trialsPage_, &TrialsPage::currentTrialChanged, landscapePage_, &LandscapePage::setHighlightedTrial);
  connect(landscapePage_, &LandscapePage::trialClicked, trialsPage_, &TrialsPage::selectTrial);
  // Brushing the Analyse page's parallel coordinates reaches the Trials and Landscape pages
  // through the model's TrialBrush, which they follow themselves.
  connect(analysePage_, &AnalysePage::trialClicked, trialsPage_, &TrialsPage::selectTrial);

  connect(document_, &RunDocument::opened, this, &MainWindow::onRunOpened);
  connect(document_, &RunDocument::failed, this, [this](const QString& message) { showError(tr("ktune"), message); });
  connect(document_, &RunDocument::exported, this,
          [this](const QString& file) { statusBar()->showMessage(tr("Exported %1").arg(file), 8000); });
  connect(diffPage_, &DiffPage::applied, this, [this](const ApplyReport& report) {
    statusBar()->showMessage(
        tr("Applied %1 entries to %2").arg(report.written.size()).arg(qstr(report.registry_file.string())));
  });
}

void MainWindow::showError(const QString& title, const QString& message) {
  emit errorShown(message);
  if (errorsToStderr_) {
    std::fprintf(stderr, "ktune-workbench: %s\n", qPrintable(message));
    return;
  }
  QMessageBox::warning(this, title, message);
}

void MainWindow::openRun(const QString& dir) {
  if (controller_->isRunning()) {
    showError(tr("A run is in progress"), tr("Stop the current run before opening another one."));
    return;
  }
  statusBar()->showMessage(tr("Opening %1…").arg(dir));
  document_->open(dir);
}

void MainWindow::importKernelTunerCache(const QString& file) {
  if (controller_->isRunning()) {
    showError(tr("A run is in progress"), tr("Stop the current run before importing one."));
    return;
  }
  const std::string outputDir = setupPage_->session().output_dir;
  try {
    const auto dir = RunDocument::importKernelTunerCache(sstr(file), outputDir.empty() ? "tuning_runs" : outputDir);
    statusBar()->showMessage(tr("Imported %1 into %2").arg(file, qstr(dir.string())));
    openRun(qstr(dir.string()));
  } catch (const std::exception& e) {
    showError(tr("Cannot import the Kernel Tuner cache"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::onRunOpened() {
  const RunMetadata& meta = *document_->metadata();
  const QString dir = qstr(document_->dir().string());
  setWindowTitle(tr("%1 — ktune workbench").arg(qstr(meta.run_name)));
  runPage_->setRunTitle(tr("Run %1 (%2, %3)").arg(qstr(meta.run_name), qstr(meta.state), qstr(meta.device.name)));
  landscapePage_->setDevice(meta.device);
  landscapePage_->setSpace(meta.space);
  try {
    setupPage_->setSession(Session::from_run(meta, document_->dir()), WorkerStart::Never,
                           tr("the run folder %1").arg(dir));
  } catch (const InputError& e) {
    statusBar()->showMessage(tr("The setup of this run cannot be shown: %1").arg(QString::fromUtf8(e.what())));
  }
  resumeAction_->setEnabled(document_->canResume());
  addRecentRun(dir);
  statusBar()->showMessage(
      tr("Opened %1: %L2 trials%3")
          .arg(dir)
          .arg(document_->trials()->rowCount())
          .arg(document_->canResume() ? tr(" — unfinished: File → Resume Run continues it") : QString()));
}

void MainWindow::loadSession(const QString& file) {
  try {
    setupPage_->loadSessionFrom(file);
    showPage(SetupPageIndex);
  } catch (const InputError& e) {
    showError(tr("Cannot load the session"), QString::fromUtf8(e.what()));
  }
}

bool MainWindow::deviceFree() {
  if (!diffPage_->isRemeasuring()) return true;
  showError(tr("Re-measuring"), tr("The Apply page is re-measuring on the device: wait for it or press \"Stop "
                                   "re-measuring\", then start the run."));
  return false;
}

void MainWindow::startRun() {
  if (!deviceFree()) return;
  if (setupPage_->workerPanel()->isConnecting()) {
    // --load-session with a worker, then --start: the run starts once the worker has said hello
    // (and the session is applied), or not at all when it fails.
    auto* once = new QObject(this);
    const auto done = [once] { once->deleteLater(); };
    connect(setupPage_->workerPanel(), &WorkerPanel::connected, once, [this, done] {
      done();
      startRun();
    });
    connect(setupPage_->workerPanel(), &WorkerPanel::failed, once, [this, done](const QString& message) {
      done();
      showError(tr("Cannot start"), message);
    });
    return;
  }
  try {
    const TuneRequest request = setupPage_->request();
    RunTarget target = setupPage_->runTarget();
    const QString title = tr("Run %1 on %2%3")
                              .arg(qstr(request.run_dir.filename().string()), qstr(target.device.name),
                                   target.isolate ? tr(" (isolated in a worker process)") : QString());
    beginRun(std::move(target), request, title);
  } catch (const InputError& e) {
    showPage(SetupPageIndex);
    showError(tr("Cannot start"),
              tr("%1\n\nFix it on the Setup page and press Start again.").arg(QString::fromUtf8(e.what())));
  }
}

void MainWindow::beginRun(RunTarget target, const TuneRequest& request, const QString& title) {
  document_->beginLiveRun(request);
  landscapePage_->setSpace(request.space);
  setWindowTitle(tr("%1 — ktune workbench").arg(qstr(request.run_dir.filename().string())));
  runPage_->setRunTitle(title);
  controller_->start(std::move(target), request);
  runPage_->setRunning(true);
  resumeAction_->setEnabled(false);
  showPage(RunPageIndex);
}

void MainWindow::replayRun(const ReplayChoice& choice) {
  if (controller_->isRunning()) {
    showError(tr("A run is in progress"), tr("Stop the current run before replaying one."));
    return;
  }
  try {
    validate(choice.strategy);  // an unknown strategy or a budget out of range: refused before anything is read
    auto backend = std::shared_ptr<ReplayBackend>(ReplayBackend::for_run(sstr(choice.runDir), backends_));
    backend->set_pace_ms(choice.paceMs);
    TuneRequest request = backend->request(choice.strategy);
    const RunMetadata& recorded = backend->metadata();
    const std::string outputDir = setupPage_->session().output_dir;
    request.run_dir = run_folder(outputDir.empty() ? "tuning_runs" : outputDir,
                                 default_run_name("replay_" + recorded.run_name + "_" + choice.strategy.kind));
    request.arguments = {"ktune-workbench",
                         "replay",
                         sstr(choice.runDir),
                         "--strategy",
                         choice.strategy.kind,
                         "--budget",
                         std::to_string(choice.strategy.budget),
                         "--seed",
                         std::to_string(choice.strategy.seed)};
    RunTarget target{backend, recorded.device, std::nullopt};
    beginRun(std::move(target), request, replayTitle(*backend, choice.strategy));
  } catch (const InputError& e) {
    showError(tr("Cannot replay"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::resumeRun() {
  if (!document_->canResume() || controller_->isRunning() || !deviceFree()) return;
  const RunMetadata& meta = *document_->metadata();
  try {
    // The Setup page holds the run's session (onRunOpened): its backend, isolation, or worker.
    const Session session = Session::from_run(meta, document_->dir());
    Backend* backend = setupPage_->currentBackend();
    if (!session.worker.empty() && (!backend || backend->name() != meta.backend))
      throw InputError("the run measured through the worker `" + session.worker +
                       "`: press Connect on the Setup page (its command is filled in), then resume again");
    if (!backend || backend->name() != meta.backend) backend = &find_backend(backends_, meta.backend);
    DeviceInfo device;
    bool found = false;
    for (const DeviceInfo& d : backend->devices())
      if (d.index == meta.device.index && d.name == meta.device.name) device = d, found = true;
    if (!found)
      throw InputError("the run was made on " + meta.device.name +
                       ", which this machine does not have; resume it there");
    TuneRequest request;
    request.family = backend->family(meta.family);
    // The tuner refuses it too, but here it is a reason not to resume, not a run that failed.
    check_workload_rules(meta, document_->dir().string(), request.family);
    request.settings() = meta.settings();
    request.run_dir = document_->dir();
    request.resume = true;
    request.arguments = meta.arguments;
    RunTarget target = setupPage_->runTarget();
    if (target.backend.get() != backend || target.device.name != device.name)
      target = RunTarget{std::shared_ptr<Backend>(std::shared_ptr<Backend>(), backend), device, std::nullopt};
    controller_->start(std::move(target), request);
  } catch (const InputError& e) {
    showError(tr("Cannot resume"), QString::fromUtf8(e.what()));
    return;
  }
  runPage_->setRunning(true);
  resumeAction_->setEnabled(false);
  runPage_->appendLog(
      tr("Resuming %1: trials already measured are kept and skipped.").arg(qstr(document_->dir().string())));
  showPage(RunPageIndex);
}

void MainWindow::exportRun(bool json) {
  if (!document_->hasRun() && document_->dir().empty()) {
    showError(tr("Nothing to export"), tr("Open a run (File → Open Run…) or run one first."));
    return;
  }
  QSettings settings;
  const QString dir = settings.value(QStringLiteral("folders/export"), QDir::homePath()).toString();
  const QString name =
      qstr(document_->dir().filename().string()) + (json ? QStringLiteral(".json") : QStringLiteral("_trials.csv"));
  const QString file =
      QFileDialog::getSaveFileName(this, json ? tr("Export run as JSON") : tr("Export trials as CSV"),
                                   QDir(dir).filePath(name), json ? tr("JSON (*.json)") : tr("CSV (*.csv)"));
  if (file.isEmpty()) return;
  if (useSettings_) settings.setValue(QStringLiteral("folders/export"), QFileInfo(file).absolutePath());
  document_->exportTo(json ? RunDocument::ExportFormat::RunJson : RunDocument::ExportFormat::TrialsCsv, file);
}

void MainWindow::exportRegistryAsAiter() {
  const Backend* backend = setupPage_->currentBackend();
  if (!backend) {
    showError(
        tr("Nothing to export"),
        tr("Choose a built-in backend and device on the Setup page: the registry is kept per backend and device."));
    return;
  }
  const std::vector<KernelFamily> families = backend->families();
  QStringList names;
  for (const KernelFamily& f : families) names << qstr(f.name);
  bool ok = false;
  const QString name =
      QInputDialog::getItem(this, tr("Export registry as aiter files"), tr("Family:"), names,
                            std::max<qsizetype>(0, names.indexOf(qstr(setupPage_->currentFamily().name))), false, &ok);
  if (!ok) return;
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Write the aiter files into…"),
      QSettings().value(QStringLiteral("folders/export"), QDir::homePath()).toString());
  if (dir.isEmpty()) return;
  const auto registryFile =
      Registry::file_for(sstr(diffPage_->registryRoot()), backend->name(), setupPage_->currentDevice().slug());
  try {
    const QStringList files = gui::exportRegistryAsAiter(registryFile, families[names.indexOf(name)], dir);
    statusBar()->showMessage(tr("Wrote %n aiter file(s) into %1", nullptr, files.size()).arg(dir), 8000);
    QMessageBox::information(
        this, tr("Registry exported"),
        tr("Wrote %n file(s):", nullptr, files.size()) + QStringLiteral("\n") + files.join(QLatin1Char('\n')));
  } catch (const std::exception& e) {
    showError(tr("Export failed"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::exportCharts() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Export every chart as PNG and SVG (and the Analyse page's data as CSV) into…"),
      QSettings().value(QStringLiteral("folders/export"), QDir::homePath()).toString());
  if (dir.isEmpty()) return;
  try {
    const QString stem = qstr(document_->dir().filename().string());
    const QStringList files = landscapePage_->exportAll(dir, stem) + analysePage_->exportAll(dir, stem);
    statusBar()->showMessage(tr("Wrote %1 chart files to %2").arg(files.size()).arg(dir), 8000);
  } catch (const InputError& e) {
    showError(tr("Export failed"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::addRecentRun(const QString& dir) {
  if (!useSettings_) return;
  QSettings settings;
  QStringList recent = settings.value(QStringLiteral("recent/runs")).toStringList();
  const QString path = QFileInfo(dir).absoluteFilePath();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecentRuns) recent.removeLast();
  settings.setValue(QStringLiteral("recent/runs"), recent);
  settings.setValue(QStringLiteral("folders/runs"), QFileInfo(path).absolutePath());
  refreshRecentRuns();
}

void MainWindow::refreshRecentRuns() {
  recentMenu_->clear();
  const QStringList recent =
      useSettings_ ? QSettings().value(QStringLiteral("recent/runs")).toStringList() : QStringList{};
  for (const QString& dir : recent) recentMenu_->addAction(dir, this, [this, dir] { openRun(dir); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (controller_->isRunning()) {
    if (QMessageBox::question(
            this, tr("Stop the run?"),
            tr("A run is in progress. Stop it and quit? Measured trials stay in the run folder and the "
               "run can be resumed later.")) != QMessageBox::Yes) {
      event->ignore();
      return;
    }
    controller_->stop();
    controller_->waitForFinished();
  }
  if (useSettings_) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/page"), stack_->currentIndex());
    landscapePage_->saveSettings(settings);
    analysePage_->saveSettings(settings);
  }
  event->accept();
}
