// A run reopens as it was made: the Setup page shows a reopened run's own family, backend,
// device, worker command (filled in, started only on Connect, which asks), space, shapes and
// measurement settings, for real runs of every kind made by the `ktune` CLI: a CPU tune, a tune
// through a worker (tests/cli/raw_worker.py), a Kernel Tuner cache import (and one imported before
// the import recorded its kernel), a replay of it and a merge of two shards. Runs this build
// cannot make again show through an entry of their own on which Start says why. A worker run made
// in another folder connects in that folder, which the panel shows (and says so when it is gone).
// A session file's space gets its family's launch limits.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QtTest>
#include <filesystem>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/run_settings.h"
#include "ktune/run_store.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/worker_panel.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

QString source(const QString& rel) { return QStringLiteral(KTUNE_SOURCE_DIR "/") + rel; }
QString python() {
  const QString p = qEnvironmentVariable("KTUNE_PYTHON");
  return p.isEmpty() ? QStringLiteral("python3") : p;  // raw_worker.py needs the standard library only
}
QString rawWorker() { return python() + QLatin1Char(' ') + source(QStringLiteral("tests/cli/raw_worker.py")); }

// Every settings field of the page that differs from the run's ("" when none).
QString differing(const RunSettings& run, const SetupPage& page) {
  QStringList out;
  for (const SettingsDifference& d : differences(run, page.session().settings()))
    out << qstr(d.field + ": run " + d.run_value + ", page " + d.asked_value);
  return out.join(QStringLiteral("; "));
}

QString errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

QString comboText(const SetupPage& page) {
  return page.findChild<QComboBox*>(QStringLiteral("backend"))->currentText();
}

}  // namespace

class TestReopenSetup : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::vector<std::unique_ptr<Backend>> backends_;

  QString runs() const { return tmp_.filePath(QStringLiteral("runs")); }
  fs::path run(const char* name) const { return fs::path(sstr(runs())) / name; }

  // The CLI with `args` run in `cwd` (default: the temporary folder); "" or what went wrong.
  QString ktune(QStringList args, const QString& cwd = {}) {
    QProcess p;
    p.setWorkingDirectory(cwd.isEmpty() ? tmp_.path() : cwd);
    p.start(qEnvironmentVariable("KTUNE_CLI"), args);
    if (!p.waitForFinished(300000)) return QStringLiteral("ktune %1 did not finish").arg(args.join(' '));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    return p.exitCode() == 0 ? QString() : QStringLiteral("ktune %1: %2").arg(args.join(' '), err);
  }

  // The Setup page after opening the run, as File → Open Run fills it.
  std::unique_ptr<SetupPage> reopen(const fs::path& dir, RunMetadata* metadata = nullptr) {
    const RunMetadata m = RunStore::read_metadata(dir);
    if (metadata) *metadata = m;
    auto page = std::make_unique<SetupPage>(backends_);
    page->setSession(Session::from_run(m, dir), WorkerStart::Never,
                     QStringLiteral("the run folder %1").arg(qstr(dir.string())));
    return page;
  }

 private slots:
  void initTestCase() {
    initialize();
    QVERIFY2(QDir::currentPath() != tmp_.path(), "the worker runs below must be opened from another folder");
    QVERIFY2(!qEnvironmentVariable("KTUNE_CLI").isEmpty(), "KTUNE_CLI is set by ctest");
    qputenv("KTUNE_CPU_CACHE", tmp_.filePath(QStringLiteral("cpu_cache")).toUtf8());
    backends_ = make_backends();
    const QStringList out{QStringLiteral("--output-dir"), runs()};
    // A generous cap: under CI's load (two suites and a build beside them on two cores) a config of
    // two threads once spent more than 100 ms in a launch, and a run with no config left fails.
    const QStringList quick{"--min-samples", "2", "--max-samples", "3", "--max-ms-per-config", "2000"};
    const QStringList cpu =
        QStringList{"tune",     "gemm", "--backend", "cpu", "--shape",  "M=16 N=64 K=64", "--strategy",     "random",
                    "--budget", "3",    "--seed",    "4",   "--method", "per_launch",     "--noise-target", "0.05"} +
        quick;
    for (const QStringList& args : {
             cpu + QStringList{"--run-name", "cpu"},
             QStringList{"tune", "raw", "--worker", rawWorker(), "--shape", "n=8,16", "--method", "per_launch",
                         "--run-name", "worker"} +
                 quick,
             QStringList{"import", "kernel-tuner", source(QStringLiteral("tests/data/kernel_tuner_matmul_cache.json")),
                         "--run-name", "kt"},
             QStringList{"tune", "--replay", runs() + "/kt", "--strategy", "random", "--budget", "10", "--seed", "3",
                         "--run-name", "replay"},
             cpu + QStringList{"--shard", "0/2", "--run-name", "shard0"},
             cpu + QStringList{"--shard", "1/2", "--run-name", "shard1"},
             QStringList{"merge", runs() + "/shard0", runs() + "/shard1", "--run-name", "merged"},
         }) {
      const QString error = ktune(args + out);
      QVERIFY2(error.isEmpty(), qPrintable(error));
    }
  }

  void cliCpuRun() {
    RunMetadata m;
    const auto page = reopen(run("cpu"), &m);
    QVERIFY(!page->showsRecordedRun());
    QCOMPARE(page->currentBackend()->name(), std::string("cpu"));
    QCOMPARE(page->currentFamily().name, std::string("gemm"));
    QCOMPARE(page->shapesModel()->problems().size(), std::size_t(1));
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
    QVERIFY(!page->isolates());
    QVERIFY2(page->originText().contains(QLatin1String("ktune tune gemm --backend cpu")),
             qPrintable(page->originText()));
    // Everything checks out but the folder, which holds the run: Start asks for another name.
    const QString error = errorOf([&] { page->request(); });
    QVERIFY2(error.contains(QLatin1String("already holds a run")), qPrintable(error));
  }

  void cliWorkerRun() {
    RunMetadata m;
    const auto page = reopen(run("worker"), &m);
    // Before anything starts, the run as recorded: the worker's command, family, device, shapes.
    QVERIFY(page->isExternalWorker());
    QCOMPARE(page->workerPanel()->command(), rawWorker());
    QVERIFY(page->workerPanel()->awaitsConfirmation());
    QVERIFY(!page->workerPanel()->isConnecting());
    QVERIFY(!page->currentBackend());
    QCOMPARE(page->currentFamily().name, std::string("raw"));
    QCOMPARE(page->currentDevice().name, std::string("Raw Device"));
    QCOMPARE(page->shapesModel()->problems().size(), std::size_t(2));
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
    QCOMPARE(page->session().worker, sstr(rawWorker()));
    QVERIFY(errorOf([&] { page->request(); }).contains(QLatin1String("press Connect")));
    // Connect asks, once; then the worker's hello and the run's setup together.
    QStringList asked;
    page->workerPanel()->setConfirmation([&asked](const QString& command, const QString&) {
      asked << command;
      return true;
    });
    QSignalSpy connected(page->workerPanel(), &WorkerPanel::connected);
    page->workerPanel()->connectWorker();
    QVERIFY(connected.wait(60000));
    QCOMPARE(asked, QStringList{rawWorker()});
    QCOMPARE(page->currentBackend()->name(), std::string("raw"));
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
  }

  // A run made in another folder with a relative worker path (a script that exists only there),
  // opened from here: the panel shows the command and the folder, and Connect starts it there.
  void workerRunFromAnotherFolder() {
    const QString made = QFileInfo(tmp_.filePath(QStringLiteral("made"))).absoluteFilePath();
    QVERIFY(QDir().mkpath(made + QStringLiteral("/w")));
    QVERIFY(QFile::copy(source(QStringLiteral("tests/cli/raw_worker.py")), made + QStringLiteral("/w/raw_worker.py")));
    const QString relative = python() + QStringLiteral(" w/raw_worker.py");
    const QString error = ktune({"tune", "raw", "--worker", relative, "--shape", "n=8", "--max-ms-per-config", "2000",
                                 "--run-name", "relative", "--output-dir", runs()},
                                made);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QString recorded = QFileInfo(made).canonicalFilePath();
    const auto page = reopen(run("relative"));
    QCOMPARE(page->workerPanel()->command(), relative);
    QCOMPARE(page->workerPanel()->workingDirectory(), recorded);
    QVERIFY2(page->workerPanel()->folderText().contains(recorded), qPrintable(page->workerPanel()->folderText()));
    QVERIFY2(page->originText().contains(recorded), qPrintable(page->originText()));
    auto* folder = page->workerPanel()->findChild<QLabel*>(QStringLiteral("workerFolder"));
    QVERIFY(folder && folder->isVisibleTo(page->workerPanel()) && folder->text().contains(recorded));
    page->workerPanel()->setConfirmation([](const QString&, const QString&) { return true; });
    QSignalSpy connected(page->workerPanel(), &WorkerPanel::connected);
    QSignalSpy failed(page->workerPanel(), &WorkerPanel::failed);
    page->workerPanel()->connectWorker();
    QVERIFY(QTest::qWaitFor([&] { return !connected.isEmpty() || !failed.isEmpty(); }, 60000));
    QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.first().first().toString()));
    QCOMPARE(page->currentBackend()->name(), std::string("raw"));
    // A run the workbench starts through it records where its worker runs.
    QCOMPARE(page->session().worker_directory, sstr(recorded));
  }

  // The folder the run was made in is gone: the panel says so and where the command runs instead.
  void workerRunWhoseFolderIsGone() {
    const fs::path gone = run("gone");
    fs::create_directories(gone);
    for (const char* file : {"trials.csv", "results.json"}) fs::copy_file(run("relative") / file, gone / file);
    nlohmann::json j = read_json_file(run("relative") / "run_metadata.json", "run metadata");
    j["working_directory"] = sstr(tmp_.filePath(QStringLiteral("removed")));
    write_file_atomic(gone / "run_metadata.json", j.dump(2));
    const auto page = reopen(gone);
    const QString said = page->workerPanel()->folderText();
    QVERIFY2(said.contains(tmp_.filePath(QStringLiteral("removed"))) &&
                 said.contains(QLatin1String("no longer exists")) && said.contains(QDir::currentPath()),
             qPrintable(said));
    QCOMPARE(page->workerPanel()->workingDirectory(), QDir::currentPath());
    // Connect (once confirmed) runs it here, and the failure says where relative paths start.
    page->workerPanel()->setConfirmation([](const QString&, const QString&) { return true; });
    QSignalSpy failed(page->workerPanel(), &WorkerPanel::failed);
    page->workerPanel()->connectWorker();
    QVERIFY(failed.wait(60000));
    const QString message = failed.first().first().toString();
    QVERIFY2(message.contains(QLatin1String("relative paths start from ") + QDir::currentPath()), qPrintable(message));
  }

  void kernelTunerImport() {
    RunMetadata m;
    const auto page = reopen(run("kt"), &m);
    QVERIFY(page->showsRecordedRun());
    QVERIFY2(comboText(*page).contains(QLatin1String("cuda")), qPrintable(comboText(*page)));
    QCOMPARE(page->currentDevice().name, std::string("NVIDIA H100 80GB HBM3"));
    const KernelFamily family = page->currentFamily();
    QCOMPARE(family.name, std::string("matmul_kernel"));
    QCOMPARE(family.key_fields.size(), std::size_t(2));
    QCOMPARE(page->shapesModel()->problems().front().key(), std::string("x=4096,y=4096"));
    QCOMPARE(page->session().measure.method, Method::PerLaunch);  // Kernel Tuner times each launch
    QVERIFY(!page->isolates());
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
    QVERIFY(page->originText().contains(QLatin1String("kernel_tuner_matmul_cache.json")));
    // Start says why it cannot tune, and what to do instead; nothing is run.
    const QString error = errorOf([&] { page->request(); });
    QVERIFY2(error.contains(QLatin1String("no kernel for 'matmul_kernel'")) &&
                 error.contains(QLatin1String("Replay a Recorded Run")),
             qPrintable(error));
    QCOMPARE(errorOf([&] { page->runTarget(); }), error);
  }

  // An import from before the import recorded its kernel still opens, and says what it lacks.
  void olderImportSaysWhatItLacks() {
    const fs::path old = run("kt_old");
    fs::create_directories(old);
    for (const char* file : {"trials.csv", "results.json"}) fs::copy_file(run("kt") / file, old / file);
    nlohmann::json j = read_json_file(run("kt") / "run_metadata.json", "run metadata");
    j.erase("family_description");
    write_file_atomic(old / "run_metadata.json", j.dump(2));
    const auto page = reopen(old);
    QVERIFY(page->showsRecordedRun());
    QCOMPARE(page->currentFamily().name, std::string("matmul_kernel"));
    QCOMPARE(page->currentFamily().key_fields.size(), std::size_t(2));
    QVERIFY2(page->originText().contains(QLatin1String("Not recorded")), qPrintable(page->originText()));
  }

  void replay() {
    RunMetadata m;
    const auto page = reopen(run("replay"), &m);
    QVERIFY(page->showsRecordedRun());
    QVERIFY(comboText(*page).startsWith(QLatin1String("replay")));
    QCOMPARE(page->currentFamily().name, std::string("matmul_kernel"));
    QVERIFY(page->spaceEditor()->space().is_list());  // the recorded configs
    const Session s = page->session();
    QCOMPARE(s.strategy.kind, std::string("random"));
    QCOMPARE(s.strategy.budget, std::size_t(10));
    QCOMPARE(s.strategy.seed, std::uint64_t(3));
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
    QVERIFY(page->originText().contains(QLatin1String("a replay of")));
    QVERIFY(errorOf([&] { page->request(); }).contains(QLatin1String("replays that run again")));
  }

  void merge() {
    RunMetadata m;
    const auto page = reopen(run("merged"), &m);
    QVERIFY(!page->showsRecordedRun());
    QCOMPARE(page->currentBackend()->name(), std::string("cpu"));
    QCOMPARE(page->currentFamily().name, std::string("gemm"));
    QVERIFY2(differing(m.settings(), *page).isEmpty(), qPrintable(differing(m.settings(), *page)));
    QVERIFY2(page->originText().contains(QLatin1String("merged from 2 shards")), qPrintable(page->originText()));
  }

  // The user may pick another backend and come back: the record's entry shows the run again.
  void backToTheRecordedEntry() {
    const auto page = reopen(run("kt"));
    auto* combo = page->findChild<QComboBox*>(QStringLiteral("backend"));
    const int record = combo->currentIndex();
    combo->setCurrentIndex(combo->findText(QStringLiteral("cpu")));
    QVERIFY(!page->showsRecordedRun());
    QCOMPARE(page->currentFamily().name, page->currentBackend()->families().front().name);
    QVERIFY(page->shapesModel()->problems().empty());  // the import's shape is no cpu family's
    combo->setCurrentIndex(record);
    QVERIFY(page->showsRecordedRun());
    QCOMPARE(page->currentFamily().name, std::string("matmul_kernel"));
    QCOMPARE(page->shapesModel()->problems().size(), std::size_t(1));
    QCOMPARE(page->session().measure.method, Method::PerLaunch);
  }

  // Opening another run, or loading a session, puts the page back on this build's backends.
  void anotherSessionLeavesTheRecord() {
    const auto page = reopen(run("kt"));
    auto* combo = page->findChild<QComboBox*>(QStringLiteral("backend"));
    const int withRecord = combo->count();
    page->setSession(Session::from_run(RunStore::read_metadata(run("cpu")), run("cpu")));
    QCOMPARE(combo->count(), withRecord - 1);
    QVERIFY(!page->showsRecordedRun());
    QCOMPARE(page->currentFamily().name, std::string("gemm"));
    Session plain;
    plain.family = "gemm";
    page->setSession(plain);
    QVERIFY(page->originText().isEmpty());
  }

  // A session file's space gets the launch limits every space of its family must hold.
  void sessionSpaceKeepsLaunchLimits() {
    for (const auto& backend : backends_)
      for (const KernelFamily& f : backend->families()) {
        if (f.launch_limits.empty()) continue;
        std::vector<Constraint> without;
        for (const Constraint& c : f.default_space.constraints())
          if (std::find(f.launch_limits.begin(), f.launch_limits.end(), c) == f.launch_limits.end())
            without.push_back(c);
        Session s;
        s.backend = backend->name();
        s.family = f.name;
        s.space = SearchSpace(f.default_space.parameters(), without);
        SetupPage page(backends_);
        page.setSession(s);
        const auto shown = page.spaceEditor()->space().constraints();
        for (const Constraint& limit : f.launch_limits)
          QVERIFY2(std::find(shown.begin(), shown.end(), limit) != shown.end(), limit.expr.c_str());
        return;
      }
    QSKIP("no family of this build has launch limits (they come with the CUDA and HIP specs)");
  }
};

QTEST_MAIN(TestReopenSetup)
#include "test_reopen_setup.moc"
