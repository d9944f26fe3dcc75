// The tuner loop on a small real backend whose configs fail the ways kernels fail in practice:
// a missing specialization (compile_error), a scratch buffer beyond the limit (launch_error),
// an unrolled loop without its remainder (wrong_result), a bounds-checked out-of-range write
// (crashed), per-element overhead too slow for the cap (timeout) or the best (slow_abort).
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <thread>

#include "axpy_backend.h"
#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

using namespace ktune;
using namespace ktune::test;

class TestTuner : public QObject {
  Q_OBJECT
 private slots:
  void everyConfigBecomesATrialAndTheBestWins() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=1000,4096", b.family("axpy").default_space);
    // The search's own best: a re-measure of the top configs may crown another (test_search_end).
    req.measure.remeasure_top = 0;
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(s.results.size(), std::size_t(2));
    QCOMPARE(rec.all<event::TrialFinished>().size(), std::size_t(18));
    QCOMPARE(s.status_counts.at("ok"), std::uint64_t(18));
    for (const auto& r : s.results) {
      QVERIFY(r.best.has_value());
      for (const auto& f : rec.all<event::TrialFinished>())
        if (f.trial.problem_key == r.problem.key()) QVERIFY(r.best->stats.median_ns <= f.trial.stats.median_ns);
      QVERIFY(r.best->tflops > 0);
      QCOMPARE(r.space_total, std::uint64_t(9));
    }
    const auto prog = rec.all<event::Progress>();
    QCOMPARE(prog.back().done, std::uint64_t(18));
    QCOMPARE(prog.back().total, std::uint64_t(18));
    QVERIFY(std::holds_alternative<event::RunStarted>(rec.events.front()));
    QVERIFY(std::holds_alternative<event::RunFinished>(rec.events.back()));
    QCOMPARE(b.opened, 2);
  }

  void baselineIsTimedInAlternationWithTheBestAfterTheSearch() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    std::string sampled;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::ProblemFinished>(e)) sampled = b.last->sampled;
    };
    // Without a re-measure round the baseline is paired with the search's best alone
    // (test_one_winner: with one, it joins the round).
    auto req = request(b, "n=4096", b.family("axpy").default_space);
    req.measure.remeasure_top = 0;
    const RunSummary s = tuner.run(req, rec);
    const ProblemResult& r = s.results.at(0);
    QCOMPARE(r.baseline_name, std::string("plain loop"));
    QVERIFY(r.baseline && r.best_paired && r.best);
    QVERIFY(r.baseline->count >= 5 && r.best_paired->count >= 5);
    QCOMPARE(*r.speedup(), r.baseline->median_ns / r.best_paired->median_ns);
    // No baseline sample before the search ends; then best and baseline alternate.
    const auto first = sampled.find('B');
    QVERIFY(first != std::string::npos && first > 9);
    QVERIFY(sampled.find(".B.B.B.B") != std::string::npos);
    QVERIFY(sampled.substr(first).find("..") == std::string::npos);
  }

  void failingConfigsAreRecordedAndTheRunGoesOn() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    // n = 1001 is not a multiple of the unroll factors, so dropping the tail is visible.
    SearchSpace space(
        {{"unroll", {2, 3}, ""}, {"chunk", {64, 100000}, ""}, {"tail", {0, 1}, ""}, {"stride", {1, 2}, ""}},
        {{"!(unroll == 3 && tail == 0)", "no tail-less variant of unroll 3"}});
    auto req = request(b, "n=1001", space);
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(statusOf(rec, "unroll=3,chunk=64,tail=1,stride=1"), TrialStatus::CompileError);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=100000,tail=1,stride=1"), TrialStatus::LaunchError);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=0,stride=1"), TrialStatus::WrongResult);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=1,stride=2"), TrialStatus::Crashed);
    // Pruned configs are counted, not reported or recorded one by one.
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, statusOf(rec, "unroll=3,chunk=64,tail=0,stride=1"));
    QCOMPARE(s.status_counts.at("pruned"), std::uint64_t(4));
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=1,stride=1"), TrialStatus::Ok);
    QCOMPARE(s.results[0].best->config.key(), std::string("unroll=2,chunk=64,tail=1,stride=1"));
    for (const auto& f : rec.all<event::TrialFinished>())
      if (f.trial.status != TrialStatus::Ok) QVERIFY2(!f.trial.error.empty(), to_string(f.trial.status));
  }

  void timeCapAndSlowAbort() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {4}, ""}, {"chunk", {4096, 16}, ""}, {"delay_us", {0, 2000}, ""}}, {});
    auto req = request(b, "n=4096", space);
    // chunk=16 with 2 ms per chunk needs 512 ms a launch, five times the cap; the healthy config
    // keeps 100 ms for its samples, so a loaded host that pauses the test still measures it.
    req.measure.max_ms_per_config = 100;
    req.measure.slow_abort = true;
    req.measure.noise_target = 1e-6;  // keep sampling so slow_abort can decide
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(statusOf(rec, "unroll=4,chunk=4096,delay_us=0"), TrialStatus::Ok);
    QCOMPARE(statusOf(rec, "unroll=4,chunk=16,delay_us=2000"), TrialStatus::Timeout);
    // One 2 ms pause per launch on a ~2 us kernel: far slower than the best, dropped early.
    QCOMPARE(statusOf(rec, "unroll=4,chunk=4096,delay_us=2000"), TrialStatus::SlowAbort);
  }

  void impossibleSpaceFailsBeforeMeasuring() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {1, 2}, ""}, {"chunk", {64}, ""}},
                      {{"chunk * 4 > scratch_bytes", "needs a big chunk"}});
    auto req = request(b, "n=100", space);
    try {
      tuner.run(req, rec);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("impossible search space"));
      QVERIFY(QString(e.what()).contains("chunk * 4 > scratch_bytes"));
    }
    QCOMPARE(b.opened, 0);
    QVERIFY(rec.events.empty());
  }

  void unknownVariableFailsBeforeMeasuring() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req =
        request(b, "n=100", SearchSpace({{"unroll", {1}, ""}, {"chunk", {64}, ""}}, {{"chunk <= l9_bytes", ""}}));
    QVERIFY_THROWS_EXCEPTION(InputError, tuner.run(req, rec));
    QCOMPARE(b.opened, 0);
  }

  void cancelStopsTheRun() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    int finished = 0;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::TrialFinished>(e) && ++finished == 3) tuner.cancel();
    };
    auto req = request(b, "n=1000,2000,3000", b.family("axpy").default_space);
    const RunSummary s = tuner.run(req, rec);
    QVERIFY(s.cancelled);
    QCOMPARE(finished, 3);
    QVERIFY(std::holds_alternative<event::RunFinished>(rec.events.back()));
  }

  void pauseHoldsMeasurement() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    tuner.set_paused(true);
    std::thread resume([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      tuner.set_paused(false);
    });
    const auto t0 = Clock::now();
    auto req = request(b, "n=100", SearchSpace({{"unroll", {1}, ""}, {"chunk", {64}, ""}}, {}));
    tuner.run(req, rec);
    resume.join();
    QVERIFY(Clock::now() - t0 >= std::chrono::milliseconds(290));
    QCOMPARE(rec.all<event::TrialFinished>().size(), std::size_t(1));
  }

  void lostDeviceEndsTheRunAsFailed() {
    QTemporaryDir dir;
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=512",
                       SearchSpace({{"lose_device", {0, 1}, ""}, {"unroll", {1, 2}, ""}, {"chunk", {64}, ""}}, {}));
    req.run_dir = std::filesystem::path(dir.path().toStdString()) / "lost";
    QVERIFY_THROWS_EXCEPTION(RunError, tuner.run(req, rec));
    QCOMPARE(rec.all<event::RunFailed>().size(), std::size_t(1));
    // The two configs measured before the loss are kept; none is recorded as crashed.
    const auto trials = RunStore::read_trials(req.run_dir);
    QCOMPARE(trials.size(), std::size_t(2));
    for (const auto& t : trials) QCOMPARE(t.status, TrialStatus::Ok);
    QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("failed"));
  }

  void runFolderHoldsEveryTrial() {
    QTemporaryDir dir;
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {1, 2, 3}, ""}, {"chunk", {64, 256}, ""}}, {{"chunk >= 128 || unroll == 1", ""}});
    auto req = request(b, "n=512", space);
    req.run_dir = std::filesystem::path(dir.path().toStdString()) / "r1";
    tuner.run(req, rec);
    const auto trials = RunStore::read_trials(req.run_dir);
    QCOMPARE(trials.size(), std::size_t(4));  // measured only
    const auto md = RunStore::read_metadata(req.run_dir);
    // The 2 pruned configs are a count per constraint in the metadata, and can be listed again.
    QCOMPARE(md.pruning.size(), std::size_t(1));
    QCOMPARE(md.pruning[0].report.total - md.pruning[0].report.valid, std::uint64_t(2));
    QCOMPARE(md.pruning[0].planned, std::uint64_t(4));
    const auto pruned = pruned_trials(md.space, md.pruning[0]);
    QCOMPARE(pruned.size(), std::size_t(2));
    QCOMPARE(pruned[0].config.key(), std::string("unroll=2,chunk=64"));
    QCOMPARE(pruned[0].status, TrialStatus::Pruned);
    QCOMPARE(md.state, std::string("finished"));
    QCOMPARE(md.family, std::string("axpy"));
    const auto results = RunStore::read_results(req.run_dir);
    QCOMPARE(results.entries.size(), std::size_t(1));

    // Resuming a finished run measures nothing again and duplicates nothing.
    Recorder again;
    req.resume = true;
    tuner.run(req, again);
    QCOMPARE(again.all<event::TrialFinished>().size(), std::size_t(0));
    QCOMPARE(RunStore::read_trials(req.run_dir).size(), std::size_t(4));
    QCOMPARE(RunStore::read_results(req.run_dir).entries.at(0).config, results.entries.at(0).config);
  }
};

QTEST_APPLESS_MAIN(TestTuner)
#include "test_tuner.moc"
