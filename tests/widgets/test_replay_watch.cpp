// Replaying a recorded run in the workbench: the dialog says what is missing, and
// `ktune-workbench --replay RUN` runs the strategy against the recorded landscape as a live run,
// saving a run folder of its own (as `ktune tune --replay` does) and a picture of it.
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "ktune/backends.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/replay_dialog.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestReplayWatch : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path recorded_;

 private slots:
  void initTestCase() {
    initialize();
    // A real, exhaustive CPU run of a small space: the landscape the replays search. Portable
    // vectors, one thread and no device constraint, so that every x86 host records the same 16
    // configs a shape (the family's constraints keep as few as 2 of a vector-width slice on a
    // CPU without AVX2).
    auto backends = make_backends();
    recorded_ = fs::path(sstr(tmp_.path())) / "recorded";
    fixture::quick_tune(find_backend(backends, "cpu"), "gemm", "M=16,32 N=64 K=64", recorded_, 0, 0, 2000,
                        [](TuneRequest& req) {
                          req.space = SearchSpace({{"MR", {4, 6}},
                                                   {"NR", {8}},
                                                   {"vec", {4}},
                                                   {"MC", {32, 64}},
                                                   {"KC", {64, 128}},
                                                   {"NC", {1024}},
                                                   {"loop_order", {0, 1}},
                                                   {"threads", {1}}},
                                                  {});
                          req.strategy = StrategySpec{};  // exhaustive
                        });
  }

  void dialogSaysWhatIsMissing() {
    ReplayDialog dialog;
    QVERIFY(dialog.problem().contains(QStringLiteral("Choose the run folder")));
    dialog.setChoice({tmp_.path(), {"random", 7, 3, 0}, 25});
    QVERIFY2(dialog.problem().contains(QStringLiteral("no run_metadata.json")), qPrintable(dialog.problem()));
    dialog.setChoice({qstr(recorded_.string()), {"genetic", 7, 3, 0}, 25});
    QVERIFY(dialog.problem().isEmpty());
    const ReplayChoice c = dialog.choice();
    QCOMPARE(c.strategy.kind, std::string("genetic"));
    QCOMPARE(c.strategy.budget, std::size_t(7));
    QCOMPARE(c.strategy.seed, std::uint64_t(3));
    QCOMPARE(c.paceMs, 25.0);
  }

  void workbenchReplaysAsALiveRun() {
    const QString workbench = qEnvironmentVariable("KTUNE_WORKBENCH");
    QVERIFY2(!workbench.isEmpty(), "KTUNE_WORKBENCH is not set: run the suite through ctest, which sets it");
    QTemporaryDir cwd;
    QProcess p;
    p.setWorkingDirectory(cwd.path());
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    const QString png = cwd.filePath(QStringLiteral("replay.png"));
    p.start(workbench,
            {QStringLiteral("--replay"), qstr(recorded_.string()), QStringLiteral("--strategy"),
             QStringLiteral("random"), QStringLiteral("--budget"), QStringLiteral("5"), QStringLiteral("--seed"),
             QStringLiteral("2"), QStringLiteral("--replay-pace"), QStringLiteral("20"), QStringLiteral("--screenshot"),
             png, QStringLiteral("--screenshot-delay"), QStringLiteral("100")});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(QFileInfo(png).size() > 0);
    const QStringList runs =
        QDir(cwd.filePath(QStringLiteral("tuning_runs"))).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(runs.size(), 1);
    QVERIFY2(runs.front().startsWith(QStringLiteral("replay_recorded_random")), qPrintable(runs.front()));
    const fs::path run = fs::path(sstr(cwd.filePath(QStringLiteral("tuning_runs/") + runs.front())));
    const RunResults results = RunStore::read_results(run);
    QCOMPARE(results.state, std::string("finished"));
    QCOMPARE(results.entries.size(), std::size_t(2));
    // Each shape's configs were recorded ones, answered with their recorded outcome: the replay
    // measured nothing new.
    std::map<std::string, Trial> recorded;
    for (const Trial& t : RunStore::read_trials(recorded_)) recorded[t.problem_key + "|" + t.config.key()] = t;
    std::size_t seen = 0;
    for (const Trial& t : RunStore::read_trials(run)) {
      ++seen;
      const auto it = recorded.find(t.problem_key + "|" + t.config.key());
      QVERIFY2(it != recorded.end(), qPrintable(qstr(t.config.key() + ": " + t.error)));
      // The replay's own order may slow-abort a config the recording measured fully.
      const bool cutShort = t.status == TrialStatus::SlowAbort && it->second.status == TrialStatus::Ok;
      if (!cutShort) QCOMPARE(t.status, it->second.status);
      if (t.status == TrialStatus::Ok || cutShort) QCOMPARE(t.samples_ns.front(), it->second.samples_ns.front());
    }
    QCOMPARE(seen, std::size_t(10));  // 5 per shape
  }
};

QTEST_MAIN(TestReplayWatch)
#include "test_replay_watch.moc"
