// The Setup page's "external worker" backend and its Isolate setting, driven as a user drives
// them: type a worker's command, connect, see what its hello offers (device, family with its key
// fields, default space and constraints), tune through it; a worker that cannot start, is not a
// worker, or speaks another protocol version leaves a message saying what to do. Isolate runs
// the CPU backend in a `ktune-workbench worker` process. The workers are tests/cli/raw_worker.py and
// examples/workers/numpy_matmul.py (python3 with numpy, which CI installs).
#include <QComboBox>
#include <QProcess>
#include <QSignalSpy>
#include <QtTest>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/tune_worker.h"
#include "ktune/widgets/worker_panel.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

QString python() { return qEnvironmentVariable("KTUNE_PYTHON"); }
QString source(const QString& rel) { return QStringLiteral(KTUNE_SOURCE_DIR "/") + rel; }
QString numpyWorker() {
  return python() + QLatin1Char(' ') + source(QStringLiteral("examples/workers/numpy_matmul.py"));
}
QString rawWorker(const QString& mode) {
  return QStringLiteral("env RAW_MODE=%1 %2 %3").arg(mode, python(), source(QStringLiteral("tests/cli/raw_worker.py")));
}

// Connects the page's worker panel and waits for the outcome; returns the failure message or "".
QString connectWorker(SetupPage& page, const QString& command) {
  auto* backend = page.findChild<QComboBox*>(QStringLiteral("backend"));
  backend->setCurrentIndex(backend->count() - 1);  // "external worker…"
  WorkerPanel* panel = page.workerPanel();
  QSignalSpy connected(panel, &WorkerPanel::connected);
  QSignalSpy failed(panel, &WorkerPanel::failed);
  panel->setCommand(command);
  panel->connectWorker();
  if (!QTest::qWaitFor([&] { return !connected.isEmpty() || !failed.isEmpty(); }, 120000))
    return QStringLiteral("no answer");
  return failed.isEmpty() ? QString() : failed.first().first().toString();
}

// Quick measurement settings so a run takes seconds.
void quick(Session& s, const QString& dir, const QString& name) {
  fixture::quickMeasure(s.measure, 2000);  // a Python worker's calls cost more than ktune's own
  // Every healthy config measured fully: which ones a slow-abort cuts short depends on load.
  s.measure.slow_abort = false;
  s.run_name = sstr(name);
  s.output_dir = sstr(dir);
}

// Runs the page's request on its run target into `doc`; "" or why it failed.
QString runThrough(SetupPage& page, RunDocument& doc) {
  QString error;
  RunController controller;
  QObject::connect(&controller, &RunController::trialsAvailable, doc.trials(), &TrialsModel::appendTrials);
  QSignalSpy finished(&controller, &RunController::finished);
  QSignalSpy failed(&controller, &RunController::failed);
  const TuneRequest request = page.request();
  doc.beginLiveRun(request);
  controller.start(page.runTarget(), request);
  if (!QTest::qWaitFor([&] { return !finished.isEmpty() || !failed.isEmpty(); }, 300000))
    error = QStringLiteral("timed out");
  if (!failed.isEmpty()) error = failed.first().first().toString();
  controller.waitForFinished();
  return error;
}

// The texts the trials table shows in `param`'s column, for the ok trials.
QStringList shownValues(TrialsModel* model, const char* param) {
  QStringList out;
  for (int row = 0; row < model->rowCount(); ++row)
    if (model->trial(row).status == TrialStatus::Ok)
      out << model->data(model->index(row, model->parameterColumn(QString::fromLatin1(param)))).toString();
  out.sort();
  out.removeDuplicates();
  return out;
}

}  // namespace

class TestExternalWorker : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
    if (python().isEmpty())
      QSKIP("no python3 with numpy was found at configure time (apt-get install python3 python3-numpy; CI has them)");
  }

  void showsWhatTheWorkerOffers() {
    SetupPage page(backends_);
    QVERIFY(!page.isExternalWorker());
    QVERIFY(page.currentBackend() != nullptr);  // a built-in backend first
    const QString error = connectWorker(page, numpyWorker());
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(page.isExternalWorker());
    QCOMPARE(page.currentBackend()->name(), std::string("numpy"));
    // The hello, as the user sees it: the worker, its protocol, its family and key fields.
    const QString status = page.workerPanel()->statusText();
    QVERIFY2(status.contains(QLatin1String("numpy_matmul.py")) && status.contains(QLatin1String("protocol 1")) &&
                 status.contains(QLatin1String("numpy_matmul")) && status.contains(QLatin1String("M, N, K, dtype")),
             qPrintable(status));
    QCOMPARE(page.currentFamily().name, std::string("numpy_matmul"));
    QVERIFY(!page.currentDevice().name.empty());
    // Its default space and constraints fill the space editor; `order` is a string parameter.
    const SearchSpace space = page.spaceEditor()->space();
    QVERIFY(space.find("block") && space.find("order"));
    QCOMPARE(space.find("order")->values.size(), std::size_t(2));
    QCOMPARE(space.constraints().size(), std::size_t(1));
    // The external worker always measures in its own process.
    QVERIFY(page.isolates() == false || page.isExternalWorker());
    QVERIFY(page.runTarget().backend.get() == page.currentBackend());
    QVERIFY(!page.runTarget().isolate);
  }

  void tunesThroughTheWorker() {
    SetupPage page(backends_);
    QVERIFY(connectWorker(page, numpyWorker()).isEmpty());
    QVERIFY(page.addShapes(QStringLiteral("M=64 N=64 K=64")));
    Session s = page.session();
    QCOMPARE(s.worker, sstr(numpyWorker()));
    quick(s, tmp_.path(), QStringLiteral("numpy"));
    page.setSession(s);  // a worker session reconnects, then applies the rest
    QTRY_VERIFY_WITH_TIMEOUT(page.currentBackend() != nullptr && !page.workerPanel()->isConnecting(), 120000);
    QCOMPARE(page.shapesModel()->problems().size(), std::size_t(1));
    RunDocument doc;
    const QString error = runThrough(page, doc);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    // block in {32, 64, 128, 256} with block <= 64 (M and N are 64): 2 blocks x 2 orders.
    int ok = 0;
    for (const Trial& t : doc.trials()->trials()) ok += t.status == TrialStatus::Ok;
    QCOMPARE(ok, 4);
    // The string parameter shows as the strings the worker offered, live and reopened.
    QCOMPARE(shownValues(doc.trials(), "order"), (QStringList{QStringLiteral("col"), QStringLiteral("row")}));
    QCOMPARE(shownValues(doc.trials(), "block"), (QStringList{QStringLiteral("32"), QStringLiteral("64")}));
    RunDocument reopened;
    QSignalSpy opened(&reopened, &RunDocument::opened);
    reopened.open(tmp_.path() + QStringLiteral("/numpy"));
    QVERIFY(opened.wait(60000));
    QCOMPARE(shownValues(reopened.trials(), "order"), (QStringList{QStringLiteral("col"), QStringLiteral("row")}));
    const RunMetadata meta = RunStore::read_metadata(fs_path(tmp_.path() + QStringLiteral("/numpy")));
    QCOMPARE(meta.backend, std::string("numpy"));
    // The session the run recorded names the worker, so reopening it offers to reconnect.
    const Session again = Session::from_run(meta, fs_path(tmp_.path() + QStringLiteral("/numpy")));
    QCOMPARE(again.worker, sstr(numpyWorker()));
    // Reopening fills the command in and starts nothing; Connect, once the command is confirmed,
    // brings the run's setup back.
    SetupPage reopenedPage(backends_);
    reopenedPage.setSession(again, WorkerStart::Never, QStringLiteral("the run folder"));
    QVERIFY(reopenedPage.isExternalWorker());
    QCOMPARE(reopenedPage.workerPanel()->command(), numpyWorker());
    QVERIFY(!reopenedPage.workerPanel()->isConnecting() && !reopenedPage.currentBackend());
    QSignalSpy connected(reopenedPage.workerPanel(), &WorkerPanel::connected);
    QStringList asked;
    reopenedPage.workerPanel()->setConfirmation([&asked](const QString& command, const QString&) {
      asked << command;
      return true;
    });
    reopenedPage.workerPanel()->connectWorker();
    QVERIFY(connected.wait(120000));
    QCOMPARE(asked, QStringList{numpyWorker()});
    QCOMPARE(reopenedPage.shapesModel()->problems().size(), std::size_t(1));
    QCOMPARE(reopenedPage.session().run_name, std::string("numpy"));
  }

  void failuresSayWhatToDo_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("other protocol version")
        << rawWorker(QStringLiteral("old"))
        << QStringList{QStringLiteral("protocol 99"), QStringLiteral("python/ktune_worker")};
    QTest::newRow("no such program") << QStringLiteral("ktune-no-such-worker --x")
                                     << QStringList{QStringLiteral("ktune-no-such-worker"), QStringLiteral("on PATH")};
    QTest::newRow("python module missing")
        << QStringLiteral("%1 -c \"import ktune_no_such_module\"").arg(python())
        << QStringList{QStringLiteral("ktune_no_such_module"), QStringLiteral("lacks a module")};
    QTest::newRow("exits at once") << QStringLiteral("true")
                                   << QStringList{QStringLiteral("exited with code 0 before its hello"),
                                                  QStringLiteral("terminal")};
    QTest::newRow("not a worker") << QStringLiteral("sleep 30")
                                  << QStringList{QStringLiteral("sent no hello"), QStringLiteral("worker-protocol.md")};
  }

  void failuresSayWhatToDo() {
    QFETCH(QString, command);
    QFETCH(QStringList, expected);
    SetupPage page(backends_);
    page.workerPanel()->setHelloTimeout(2);
    const QString error = connectWorker(page, command);
    for (const QString& e : expected) QVERIFY2(error.contains(e), qPrintable(error));
    QVERIFY(page.currentBackend() == nullptr);
    QVERIFY(page.workerPanel()->statusText().contains(expected.first().toHtmlEscaped()));
    // Start says what is missing instead of running.
    try {
      page.request();
      QFAIL("a request without a connected worker");
    } catch (const InputError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("press Connect")), e.what());
    }
  }

  void emptyCommandIsRefused() {
    SetupPage page(backends_);
    const QString error = connectWorker(page, QStringLiteral("  "));
    QVERIFY2(error.contains(QLatin1String("No command")), qPrintable(error));
  }

  void isolateMeasuresInAWorkerProcess() {
    const QString cli = qEnvironmentVariable("KTUNE_WORKBENCH");
    QVERIFY2(!cli.isEmpty(), "KTUNE_WORKBENCH is set by ctest");
    SetupPage page(backends_);
    QVERIFY(!page.isolates());  // no worker program known: not offered
    page.setWorkerProgram({cli, QStringLiteral("worker")});
    QVERIFY(!page.isolates());  // the CPU backend measures in process by default
    Session s = page.session();
    s.isolate = true;
    std::vector<Parameter> params = page.currentFamily().default_space.parameters();
    for (Parameter& p : params)
      if (p.values.size() > 2) p.values.resize(2);
    s.space = SearchSpace(params, page.currentFamily().default_space.constraints());
    s.problems = expand_shape(page.currentFamily(), "M=16 N=64 K=64");
    quick(s, tmp_.path(), QStringLiteral("isolated"));
    page.setSession(s);
    QVERIFY(page.isolates());
    const RunTarget target = page.runTarget();
    QVERIFY(target.isolate.has_value());
    QCOMPARE(QString::fromStdString(target.isolate->argv.front()), cli);
    RunDocument doc;
    const QString error = runThrough(page, doc);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(doc.trials()->rowCount() > 0);
    const RunMetadata meta = RunStore::read_metadata(fs_path(tmp_.path() + QStringLiteral("/isolated")));
    bool viaWorker = false;
    for (const auto& [name, version] : meta.versions)
      viaWorker |= name == "worker" && version.find("ktune-workbench worker") == 0;
    QVERIFY2(viaWorker, "the run's versions name the worker that measured it");
    QCOMPARE(meta.backend, std::string("cpu"));

    // Its worker mode refuses what it does not know, saying what it takes.
    QProcess bad;
    bad.start(cli, {QStringLiteral("worker"), QStringLiteral("--gpu"), QStringLiteral("1")});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(QString::fromUtf8(bad.readAllStandardError()).contains(QLatin1String("--backend B --device I")));
  }

  // A malformed synthetic device is refused at start, naming the variable: exit 2, no terminate().
  void malformedCpuDeviceIsRefusedAtStart() {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("KTUNE_CPU_DEVICE"), QStringLiteral("l2=lots"));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(qEnvironmentVariable("KTUNE_WORKBENCH"),
            {QStringLiteral("--screenshot"), tmp_.filePath(QStringLiteral("x.png"))});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(
        QString::fromUtf8(p.readAllStandardError()).contains(QLatin1String("KTUNE_CPU_DEVICE: bad field 'l2=lots'")));
  }

 private:
  static std::filesystem::path fs_path(const QString& s) { return std::filesystem::path(sstr(s)); }
};

QTEST_MAIN(TestExternalWorker)
#include "test_external_worker.moc"
