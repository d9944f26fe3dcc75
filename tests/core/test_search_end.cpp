// How a search ends: a time budget stops it between trials (and a resumed run gets only what
// is left of it), and the best few configs are re-measured in alternation so a lucky search
// timing cannot crown a config: the winner comes from the paired numbers, is recorded as
// re-measured in results.json, and the journal keeps one row per config.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "axpy_backend.h"
#include "ktune/files.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "lucky_backend.h"

using namespace ktune;
using namespace ktune::test;
namespace fs = std::filesystem;

class TestSearchEnd : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path root() const { return dir_.path().toStdString(); }

  TuneRequest lucky(LuckyBackend& b, int top, const std::string& name) {
    TuneRequest req;
    req.family = b.family("lucky");
    req.problems = expand_shape(req.family, "n=1");
    req.space = req.family.default_space;
    req.measure.warmup_ms = 0;
    req.measure.settle_ms = 0;
    req.measure.min_samples = req.measure.max_samples = 5;
    req.measure.slow_abort = false;
    req.measure.remeasure_top = top;
    req.compile_threads = 1;
    req.run_dir = root() / name;
    return req;
  }

 private slots:
  void topConfigsAreRemeasuredInAlternationAndTheFastestWins() {
    LuckyBackend b;
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, 3, "top3"), rec);
    const ProblemResult& r = s.results.front();
    QVERIFY(r.best);
    QCOMPARE(r.best->config.key(), std::string("x=2"));  // not x=1, the search's lucky best
    QCOMPARE(r.remeasured.size(), std::size_t(3));
    QCOMPARE(r.remeasured[0].config.key(), std::string("x=1"));  // in the search's order
    QCOMPARE(r.remeasured[0].search_median_ns, 90.0);
    QCOMPARE(r.remeasured[0].stats.median_ns, 120.0);
    QCOMPARE(r.remeasured[1].stats.median_ns, 100.0);
    QCOMPARE(r.remeasured[2].config.key(), std::string("x=3"));
    // After the search's samples, the three alternate: 1 2 3 1 2 3 ...
    const std::string& order = b.order;
    QVERIFY2(order.find("123123123123") != std::string::npos, order.c_str());

    // results.json names the winner and what was re-measured; trials.csv holds each config once.
    const RunResults saved = RunStore::read_results(root() / "top3");
    QCOMPARE(saved.entries.front().config.key(), std::string("x=2"));
    QCOMPARE(saved.entries.front().remeasured.size(), std::size_t(3));
    QCOMPARE(saved.entries.front().remeasured[0].stats.median_ns, 120.0);
    QCOMPARE(saved.entries.front().remeasured[0].search_median_ns, 90.0);
    QCOMPARE(RunStore::read_trials(root() / "top3").size(), std::size_t(4));
    bool said = false;
    for (const auto& l : rec.all<event::Log>())
      said = said || l.message.find("x=2 wins, not the search's best") != std::string::npos;
    QVERIFY(said);

    // Resumed, the recorded trials are not measured again and the re-measure decides alike.
    TuneRequest again = lucky(b, 3, "top3");
    again.resume = true;
    Recorder rec2;
    const RunSummary s2 = Tuner(b, b.devices()[0]).run(again, rec2);
    QVERIFY(rec2.all<event::TrialFinished>().empty());
    QCOMPARE(RunStore::read_trials(root() / "top3").size(), std::size_t(4));
    QCOMPARE(s2.results.front().best->config.key(), std::string("x=2"));
    QCOMPARE(s2.results.front().remeasured[0].stats.median_ns, 120.0);
  }

  void remeasureOffKeepsTheSearchsBest() {
    for (int top : {0, 1}) {
      LuckyBackend b;  // x=1 lucky again
      Recorder rec;
      const RunSummary s = Tuner(b, b.devices()[0]).run(lucky(b, top, "top" + std::to_string(top)), rec);
      QCOMPARE(s.results.front().best->config.key(), std::string("x=1"));
      QVERIFY(s.results.front().remeasured.empty());
      const nlohmann::json j =
          nlohmann::json::parse(read_text_file(root() / ("top" + std::to_string(top)) / "results.json"));
      QVERIFY(!j["results"][0].contains("remeasured"));
    }
  }

  // Every trial takes at least its 30 ms warm-up: a budget of 0.4 s stops a 144-config search
  // early, between trials, and the run still finishes with a result.
  void timeBudgetStopsTheSearchAndCountsAcrossResume() {
    AxpyBackend b;
    TuneRequest req = request(b, "n=256",
                              SearchSpace({{"unroll", {1, 2, 4}, ""},
                                           {"chunk", {64, 128, 256, 512, 1024, 2048}, ""},
                                           {"pad", {0, 1, 2, 3, 4, 5, 6, 7}, ""}},
                                          {}));
    req.strategy = {"random", 0, 1, 0.4};
    req.measure.warmup_ms = 30;
    req.measure.remeasure_top = 0;
    req.run_dir = root() / "timed";
    Recorder rec;
    const RunSummary s = Tuner(b, b.devices()[0]).run(req, rec);
    QVERIFY(!s.cancelled);
    const std::size_t first = RunStore::read_trials(req.run_dir).size();
    QVERIFY2(first >= 1 && first < 144, qPrintable(QString::number(first)));
    QVERIFY(s.results.front().best);
    QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("finished"));
    bool said = false;
    for (const auto& l : rec.all<event::Log>()) said = said || l.message.find("time budget of") != std::string::npos;
    QVERIFY(said);

    // The budget was spent by the recorded trials: a resume has (almost) nothing left to spend.
    req.resume = true;
    Recorder again;
    Tuner(b, b.devices()[0]).run(req, again);
    const std::size_t added = RunStore::read_trials(req.run_dir).size() - first;
    QVERIFY2(added <= 2, qPrintable(QString("a resume of a spent time budget measured %1 more").arg(added)));
  }
};

QTEST_GUILESS_MAIN(TestSearchEnd)
#include "test_search_end.moc"
