// A real tuning run on the CPU backend driven the way the workbench drives it: the Setup page
// builds the request, the RunController runs it on its worker thread, and every trial reaches
// the trials model, the Run page and the trials table, with UI updates batched.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>
#include <fstream>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "ktune/widgets/tune_worker.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestCpuRun : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;

  // A small slice of the family's own space (first two values of each parameter) and quick
  // measurement settings, so the run takes seconds.
  Session quickSession(SetupPage& page, const QString& runName) {
    Session s = page.session();
    std::vector<Parameter> params = page.currentFamily().default_space.parameters();
    for (Parameter& p : params)
      if (p.values.size() > 2) p.values.resize(2);
    s.space = SearchSpace(params, page.currentFamily().default_space.constraints());
    s.problems = expand_shape(page.currentFamily(), "M=8,32 N=64 K=64");
    fixture::quickMeasure(s.measure, 100);
    s.run_name = sstr(runName);
    s.output_dir = sstr(tmp_.path());
    return s;
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
  }

  void fullRunShowsEveryTrial() {
    SetupPage setup(backends_);
    setup.setSession(quickSession(setup, QStringLiteral("full")));
    const TuneRequest request = setup.request();
    RunDocument doc;
    RunPage runPage(doc.trials());
    TrialsPage trialsPage(doc.trials());
    trialsPage.show();
    RunController controller;
    connect(&controller, &RunController::trialsAvailable, doc.trials(), &TrialsModel::appendTrials);
    connect(&controller, &RunController::progress, &runPage, &RunPage::onProgress);
    connect(&controller, &RunController::problemStarted, &runPage, &RunPage::onProblemStarted);
    QSignalSpy finished(&controller, &RunController::finished);
    QSignalSpy failed(&controller, &RunController::failed);
    QSignalSpy batches(&controller, &RunController::trialsAvailable);
    QSignalSpy progress(&controller, &RunController::progress);

    doc.beginLiveRun(request);
    QElapsedTimer wall;
    wall.start();
    controller.start(*setup.currentBackend(), setup.currentDevice(), request);
    QVERIFY(controller.isRunning());
    QVERIFY_THROWS_EXCEPTION(InputError, controller.start(*setup.currentBackend(), setup.currentDevice(), request));
    QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 300000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const double seconds = static_cast<double>(wall.elapsed()) / 1e3;
    QVERIFY(!controller.isRunning());

    const RunSummary summary = finished.first().first().value<RunSummary>();
    QVERIFY(!summary.cancelled);
    std::uint64_t total = 0;
    for (const auto& [status, n] : summary.status_counts) total += n;
    const auto pruned = summary.status_counts.count("pruned") ? summary.status_counts.at("pruned") : 0;
    const auto onDisk = RunStore::read_trials(request.run_dir);
    QVERIFY(total > 10);
    QVERIFY(pruned > 0);
    // Only trials that ran are rows (and on disk); pruned configs are counted.
    QCOMPARE(static_cast<std::uint64_t>(doc.trials()->rowCount()), total - pruned);
    QCOMPARE(static_cast<std::size_t>(doc.trials()->rowCount()), onDisk.size());
    for (std::size_t i = 0; i < onDisk.size(); ++i) {
      const int row = doc.trials()->rowForId(onDisk[i].id);
      QVERIFY(row >= 0);
      QCOMPARE(doc.trials()->trial(row).config, onDisk[i].config);
      QCOMPARE(doc.trials()->trial(row).status, onDisk[i].status);
    }
    // The Run page counts measured, pruned and failed configs apart.
    QCOMPARE(runPage.measuredCount(), total - pruned);
    QCOMPARE(runPage.statusCount(TrialStatus::Pruned), pruned);
    QCOMPARE(runPage.failedCount(),
             total - pruned - runPage.statusCount(TrialStatus::Ok) - runPage.statusCount(TrialStatus::SlowAbort));
    std::uint64_t shown = 0;
    for (TrialStatus s : kAllTrialStatuses) shown += runPage.statusCount(s);
    QCOMPARE(shown, total);
    // Every trial that ran is listed; selecting Pruned lists the pruned configs, re-enumerated.
    QCOMPARE(trialsPage.proxy()->rowCount(), static_cast<int>(total - pruned));
    trialsPage.setStatusFilter({TrialStatus::Pruned});
    QCOMPARE(static_cast<std::uint64_t>(trialsPage.proxy()->rowCount()), pruned);
    QCOMPARE(runPage.measuredCount(), total - pruned);  // listing them counts nothing twice
    trialsPage.setStatusFilter({});
    QCOMPARE(runPage.shapesWithBest(), 2);
    // Batched: at most ~30 UI updates per second, however many trials finished.
    QVERIFY(batches.count() < doc.trials()->rowCount());
    QVERIFY2(controller.updatesDelivered() <= seconds * RunController::kMaxUpdatesPerSecond + 3,
             qPrintable(QStringLiteral("%1 updates in %2 s").arg(controller.updatesDelivered()).arg(seconds)));
    QVERIFY(!progress.isEmpty());
    const auto last = progress.last().first().value<event::Progress>();
    QCOMPARE(last.done, last.total);

    // The finished run reads back as a document with results.
    QSignalSpy results(&doc, &RunDocument::resultsChanged);
    doc.finishLiveRun();
    QVERIFY(results.wait(30000));
    QVERIFY(doc.results().has_value());
    QCOMPARE(doc.results()->entries.size(), std::size_t(2));
  }

  void stopKeepsWhatWasMeasured() {
    SetupPage setup(backends_);
    Session s = quickSession(setup, QStringLiteral("stopped"));
    s.space = setup.currentFamily().default_space;  // large enough not to finish in time
    s.measure.max_samples = 20;
    setup.setSession(s);
    const TuneRequest request = setup.request();
    RunDocument doc;
    RunController controller;
    connect(&controller, &RunController::trialsAvailable, doc.trials(), &TrialsModel::appendTrials);
    QSignalSpy finished(&controller, &RunController::finished);
    QSignalSpy paused(&controller, &RunController::pausedChanged);
    doc.beginLiveRun(request);
    controller.start(*setup.currentBackend(), setup.currentDevice(), request);
    QTRY_VERIFY_WITH_TIMEOUT(doc.trials()->rowCount() >= 3, 60000);
    controller.setPaused(true);
    QCOMPARE(paused.count(), 1);
    QVERIFY(controller.isPaused());
    controller.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
    const RunSummary summary = finished.first().first().value<RunSummary>();
    QVERIFY(summary.cancelled);
    QVERIFY(!controller.isPaused());
    QCOMPARE(static_cast<std::size_t>(doc.trials()->rowCount()), RunStore::read_trials(request.run_dir).size());
  }

  void closingMidRunStopsAndJoins() {
    SetupPage setup(backends_);
    Session s = quickSession(setup, QStringLiteral("closed"));
    s.space = setup.currentFamily().default_space;
    setup.setSession(s);
    const TuneRequest request = setup.request();
    RunDocument doc;
    auto controller = std::make_unique<RunController>();
    connect(controller.get(), &RunController::trialsAvailable, doc.trials(), &TrialsModel::appendTrials);
    doc.beginLiveRun(request);
    controller->start(*setup.currentBackend(), setup.currentDevice(), request);
    QTRY_VERIFY_WITH_TIMEOUT(doc.trials()->rowCount() >= 1, 60000);
    // What closing the window does: stop, then join the worker without running the event loop.
    QElapsedTimer joined;
    joined.start();
    controller->stop();
    controller->waitForFinished();
    controller.reset();
    QVERIFY2(joined.elapsed() < 30000, "the worker thread was not joined");
    QVERIFY(RunStore::read_trials(request.run_dir).size() >= static_cast<std::size_t>(doc.trials()->rowCount()));
  }

  void badSetupIsRefusedBeforeRunning() {
    SetupPage setup(backends_);
    Session s = quickSession(setup, QStringLiteral("bad"));
    s.problems.clear();
    setup.setSession(s);
    try {
      setup.request();
      QFAIL("a session without shapes was accepted");
    } catch (const InputError& e) {
      QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("shape")));
    }
    // An existing run folder is refused instead of being overwritten.
    s = quickSession(setup, QStringLiteral("full"));
    fs::create_directories(fs::path(sstr(tmp_.path())) / "full");
    std::ofstream(fs::path(sstr(tmp_.path())) / "full" / "run_metadata.json") << "{}";
    setup.setSession(s);
    QVERIFY_THROWS_EXCEPTION(InputError, setup.request());
    // A run name that would leave the runs folder is refused, with the reason.
    for (const char* name : {"../escape", "..", "/tmp/escape"}) {
      setup.setSession(quickSession(setup, QString::fromUtf8(name)));
      try {
        setup.request();
        QFAIL(name);
      } catch (const InputError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("run name")), e.what());
      }
    }
  }
};

QTEST_MAIN(TestCpuRun)
#include "test_cpu_run.moc"
