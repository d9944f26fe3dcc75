// Run integrity across interruptions: a resume continues the run it names with the run's own
// settings, a resumed strategy makes the choices an uninterrupted run makes, a failed write is
// named and marks the run failed, and repeated shapes are tuned once.
#include <signal.h>
#include <sys/resource.h>

#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <set>

#include "axpy_backend.h"
#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

using namespace ktune;
using namespace ktune::test;
namespace fs = std::filesystem;

namespace {

// Problem and config of every trial of a run: what it measured.
std::multiset<std::string> measured(const fs::path& run) {
  std::multiset<std::string> out;
  for (const auto& t : RunStore::read_trials(run)) out.insert(t.problem_key + " " + t.config.key());
  return out;
}

std::string file_text(const fs::path& file) { return read_text_file(file); }

// Cancels the run after `k` trials finished, as a kill between two trials would end it.
struct CancelAfter : Recorder {
  CancelAfter(Tuner& tuner, int k) {
    hook = [&tuner, k, n = 0](const TuneEvent& e) mutable {
      if (std::holds_alternative<event::TrialFinished>(e) && ++n == k) tuner.cancel();
    };
  }
};

}  // namespace

class TestRunIntegrity : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  fs::path root() const { return dir_.path().toStdString(); }

  // 144 configs per problem, two problems, a noise-free landscape.
  TuneRequest modelled(AxpyBackend& b, const std::string& kind, const std::string& name) {
    b.modelled = true;
    TuneRequest req = request(b, "n=256,512",
                              SearchSpace({{"unroll", {1, 2, 4}, ""},
                                           {"chunk", {64, 128, 256, 512, 1024, 2048}, ""},
                                           {"pad", {0, 1, 2, 3, 4, 5, 6, 7}, ""}},
                                          {}));
    req.strategy = {kind, 40, 7};
    req.seed = 7;
    req.measure.warmup_ms = 0;
    req.run_dir = root() / name;
    return req;
  }

 private slots:
  void resumedStrategyMeasuresWhatAnUninterruptedRunMeasures_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("random") << "random";
    QTest::newRow("local") << "local";
    QTest::newRow("genetic") << "genetic";
    QTest::newRow("bayes") << "bayes";
  }
  void resumedStrategyMeasuresWhatAnUninterruptedRunMeasures() {
    QFETCH(QString, kind);
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder whole_rec;
    tuner.run(modelled(b, kind.toStdString(), "whole_" + kind.toStdString()), whole_rec);
    const auto whole = measured(root() / ("whole_" + kind.toStdString()));
    QCOMPARE(whole.size(), std::size_t(80));  // the budget of 40, for each of two problems

    // Killed after every 7 trials and resumed until it finishes.
    TuneRequest req = modelled(b, kind.toStdString(), "killed_" + kind.toStdString());
    int sessions = 0;
    for (bool cancelled = true; cancelled; ++sessions) {
      CancelAfter rec(tuner, 7);
      cancelled = tuner.run(req, rec).cancelled;
      req.resume = true;
      QVERIFY(sessions < 50);
    }
    QVERIFY(sessions > 10);
    // The same configs, each once: the budget counts across sessions.
    QCOMPARE(measured(req.run_dir), whole);
    QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("finished"));
  }

  void resumeWithOtherSettingsIsRefusedAndChangesNothing() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    TuneRequest req = modelled(b, "random", "refused");
    CancelAfter rec(tuner, 5);
    QVERIFY(tuner.run(req, rec).cancelled);
    const std::string metadata = file_text(req.run_dir / "run_metadata.json");
    const std::string trials = file_text(req.run_dir / "trials.csv");

    auto refused = [&](TuneRequest other, const QString& field) {
      other.resume = true;
      Recorder r;
      try {
        tuner.run(other, r);
        QFAIL("expected InputError");
      } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains(field + " differs from the run's"), e.what());
      }
      QCOMPARE(file_text(req.run_dir / "run_metadata.json"), metadata);
      QCOMPARE(file_text(req.run_dir / "trials.csv"), trials);
    };
    TuneRequest shapes = req;
    shapes.problems = expand_shape(req.family, "n=256");
    refused(shapes, "problems");
    TuneRequest space = req;
    space.space = SearchSpace({{"unroll", {1, 2}, ""}, {"chunk", {64}, ""}}, {});
    refused(space, "space");
    TuneRequest budget = req;
    budget.strategy.budget = 41;
    refused(budget, "strategy.budget");
    TuneRequest time_budget = req;
    time_budget.strategy.time_budget_s = 60;
    refused(time_budget, "strategy.time_budget_s");
    TuneRequest top = req;
    top.measure.remeasure_top = 5;
    refused(top, "measure.remeasure_top");
    TuneRequest noise = req;
    noise.measure.noise_target = 0.05;
    refused(noise, "measure.noise_target");

    // The run's own settings continue it; the same shapes in another order are the same run.
    TuneRequest same = req;
    std::reverse(same.problems.begin(), same.problems.end());
    same.resume = true;
    Recorder r;
    QVERIFY(!tuner.run(same, r).cancelled);
    QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("finished"));
  }

  void runCancelledBeforeItsFirstTrialResumes() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    TuneRequest req = modelled(b, "random", "early");
    Recorder rec;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::RunStarted>(e)) tuner.cancel();
    };
    QVERIFY(tuner.run(req, rec).cancelled);
    QVERIFY(RunStore::read_trials(req.run_dir).empty());
    req.resume = true;
    Recorder again;
    QVERIFY(!tuner.run(req, again).cancelled);
    QCOMPARE(RunStore::read_trials(req.run_dir).size(), std::size_t(80));
  }

  void folderWithoutMetadataSaysToStartAgain() {
    // Killed inside RunStore::create: the lock and trials.csv exist, run_metadata.json not yet.
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    TuneRequest req = modelled(b, "random", "torn_start");
    fs::create_directories(req.run_dir);
    write_file_atomic(req.run_dir / "trials.csv", "id,problem,status\n");
    req.resume = true;
    Recorder rec;
    try {
      tuner.run(req, rec);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("start it again without --resume"), e.what());
    }
    req.resume = false;
    QVERIFY(!tuner.run(req, rec).cancelled);
  }

  void repeatedShapesAreTunedOnce() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    TuneRequest req = modelled(b, "random", "repeated");
    req.problems = expand_shape(req.family, "n=256,512,256");
    for (auto& p : expand_shape(req.family, "n=512")) req.problems.push_back(p);
    Recorder rec;
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(s.results.size(), std::size_t(2));
    QCOMPARE(RunStore::read_results(req.run_dir).entries.size(), std::size_t(2));
    QCOMPARE(RunStore::read_metadata(req.run_dir).problems.size(), std::size_t(2));
    QCOMPARE(measured(req.run_dir).size(), std::size_t(80));
  }

  // A write refused mid-run (as a full disk refuses it): injected with RLIMIT_FSIZE, which an
  // unprivileged process may lower, so that trials.csv cannot grow past its size.
  void refusedAppendNamesTrialsCsvAndFailsTheRun_data() {
    QTest::addColumn<bool>("resultsRefusedToo");
    QTest::newRow("trials.csv refused") << false;
    QTest::newRow("results.json refused too") << true;
  }
  void refusedAppendNamesTrialsCsvAndFailsTheRun() {
    QFETCH(bool, resultsRefusedToo);
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    TuneRequest req = modelled(b, "random", resultsRefusedToo ? "full2" : "full1");
    req.measure.min_samples = req.measure.max_samples = 100;  // long rows: trials.csv outgrows the other files
    struct rlimit saved {};
    QVERIFY(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // a refused write, not a killed process
    Recorder rec;
    int n = 0;
    bool limited = false;
    rec.hook = [&](const TuneEvent& e) {
      if (!std::holds_alternative<event::TrialFinished>(e) || ++n != 10) return;
      const auto size = fs::file_size(req.run_dir / "trials.csv");
      if (fs::file_size(req.run_dir / "run_metadata.json") * 2 >= size) return;  // cannot tell the files apart
      // A folder where results.json goes: its rename fails, whoever runs the test.
      if (resultsRefusedToo) fs::create_directories(req.run_dir / "results.json" / "occupied");
      struct rlimit lim = saved;
      lim.rlim_cur = static_cast<rlim_t>(size + 1);
      limited = ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
    };
    QString message;
    try {
      tuner.run(req, rec);
    } catch (const RunError& e) {
      message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::signal(SIGXFSZ, old_handler);
    if (!limited) QSKIP("cannot lower RLIMIT_FSIZE here (or trials.csv did not outgrow the metadata)");
    QVERIFY2(message.startsWith("cannot append to " + QString::fromStdString((req.run_dir / "trials.csv").string())),
             qPrintable(message));
    if (resultsRefusedToo) {
      QVERIFY2(message.contains("could not be marked failed either") && message.contains("results.json"),
               qPrintable(message));
    } else {
      QVERIFY2(!message.contains("results.json"), qPrintable(message));
      QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("failed"));
    }
  }
};

QTEST_APPLESS_MAIN(TestRunIntegrity)
#include "test_run_integrity.moc"
