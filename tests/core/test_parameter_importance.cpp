// Which parameters matter (fANOVA over a random forest of log latency) and the slice of a shape's
// trials along one parameter, on synthetic landscapes whose answer is known: latency that
// depends on A strongly, B weakly and C not at all; a string parameter that matters, in an order
// its spelling does not have; two that matter mostly together (against the exact decomposition);
// too few trials, one value, one time.
#include <QtTest>
#include <cmath>
#include <random>

#include "ktune/parameter_importance.h"
#include "ktune/parameter_slice.h"

using namespace ktune;

namespace {

const std::string kKey = "M=64,N=512,K=512,dtype=f32";

Trial trial(std::int64_t id, std::vector<std::pair<std::string, ParamValue>> config, double median_ns,
            TrialStatus status = TrialStatus::Ok, const std::string& key = kKey) {
  Trial t;
  t.id = id;
  t.problem_key = key;
  t.config = Config(std::move(config));
  t.status = status;
  if (median_ns > 0) {
    t.samples_ns = {median_ns, median_ns * 1.002, median_ns * 0.998};
    t.stats = summarize(t.samples_ns);
  }
  return t;
}

// Every config of A (powers of two) × B (1..4) × C (strings) once, latency
// exp(a·index(A) + b·index(B)) µs times a little noise; then failures and another shape's trials
// that must not count.
std::vector<Trial> additive(double a, double b) {
  std::mt19937 rng(7);
  std::vector<Trial> out;
  std::int64_t id = 0;
  const std::vector<int> as{16, 32, 64, 128, 256};
  const std::vector<const char*> cs{"x", "y", "z"};
  for (std::size_t i = 0; i < as.size(); ++i)
    for (int bv = 1; bv <= 4; ++bv)
      for (const char* c : cs) {
        const double noise = 1 + 0.01 * (static_cast<double>(rng()) / 4294967296.0);
        const double ns = 1000 * std::exp(a * static_cast<double>(i) + b * (bv - 1)) * noise;
        out.push_back(trial(id++, {{"A", as[i]}, {"B", bv}, {"C", c}}, ns));
      }
  out.push_back(trial(id++, {{"A", 16}, {"B", 1}, {"C", "x"}}, 0, TrialStatus::CompileError));
  out.push_back(trial(id++, {{"A", 256}, {"B", 4}, {"C", "z"}}, 0, TrialStatus::Crashed));
  out.push_back(trial(id++, {{"A", 16}, {"B", 4}, {"C", "x"}}, 1, TrialStatus::Ok, "M=16,N=512,K=512,dtype=f32"));
  return out;
}

const ParameterImportance& find(const ImportanceReport& r, const std::string& name) {
  for (const ParameterImportance& p : r.parameters)
    if (p.name == name) return p;
  throw std::runtime_error("no parameter " + name);
}

}  // namespace

class TestParameterImportance : public QObject {
  Q_OBJECT

 private slots:
  // A moves the time strongly, B weakly, C not at all: A > B > C, C near zero, and the signs say
  // that larger A and B are slower.
  void ranksStrongWeakAndNone() {
    const ImportanceReport r = parameter_importance(additive(1.0, 0.15), kKey, {"A", "B", "C"});
    QCOMPARE(r.status, ImportanceReport::Status::Ok);
    QCOMPARE(r.trials, std::size_t(60));  // failures and the other shape left out
    QCOMPARE(r.configs, std::size_t(60));
    const ParameterImportance &a = find(r, "A"), &b = find(r, "B"), &c = find(r, "C");
    QVERIFY2(a.importance > b.importance && b.importance > c.importance,
             qPrintable(QStringLiteral("A %1 B %2 C %3").arg(a.importance).arg(b.importance).arg(c.importance)));
    QVERIFY2(c.importance < 0.01, qPrintable(QString::number(c.importance)));
    QVERIFY(b.importance > 0.01);
    QCOMPARE(a.importance + b.importance + c.importance, 1.0);
    // An additive landscape: main effects explain nearly all of it.
    QVERIFY2(r.main_effects > 0.95, qPrintable(QString::number(r.main_effects)));
    QVERIFY(a.ordered && b.ordered && !c.ordered);
    QVERIFY(a.correlation > 0.8);
    QVERIFY(b.correlation > 0.1);
    QVERIFY2(c.correlation < 0.2, qPrintable(QString::number(c.correlation)));  // η: no sign for strings
    QVERIFY(QString::fromStdString(r.message()).startsWith(QStringLiteral("fANOVA over 60 ok trials")));
  }

  // The same trials and seed give the same numbers; each tree's bootstrap is the seed's.
  void seededAndDeterministic() {
    const auto trials = additive(1.0, 0.15);
    const ImportanceReport one = parameter_importance(trials, kKey, {"A", "B", "C"});
    const ImportanceReport two = parameter_importance(trials, kKey, {"A", "B", "C"});
    for (std::size_t j = 0; j < 3; ++j) {
      QCOMPARE(one.parameters[j].importance, two.parameters[j].importance);
      QCOMPARE(one.parameters[j].variance_std, two.parameters[j].variance_std);
    }
    ImportanceOptions other;
    other.seed = 42;
    const ImportanceReport three = parameter_importance(trials, kKey, {"A", "B", "C"}, other);
    QVERIFY(find(three, "A").importance > find(three, "B").importance);
  }

  // Strings and booleans: a string parameter whose fast value sorts between the slow ones still
  // comes first (categories split by their times, not their spelling), a boolean that matters
  // has a sign.
  void categoriesAndBooleans() {
    std::vector<Trial> trials;
    std::int64_t id = 0;
    const std::map<std::string, double> layout{{"col", 8.0}, {"row", 1.0}, {"tile", 6.0}};
    for (const auto& [name, factor] : layout)
      for (bool vec : {false, true})
        for (int unroll : {1, 2, 4})
          trials.push_back(trial(id++, {{"layout", name}, {"vec", vec}, {"unroll", unroll}},
                                 1000 * factor * (vec ? 1.0 : 1.5) * (1 + 0.001 * unroll)));
    const ImportanceReport r = parameter_importance(trials, kKey, {"layout", "vec", "unroll"});
    QCOMPARE(r.status, ImportanceReport::Status::Ok);
    const ParameterImportance &layoutImportance = find(r, "layout"), &vec = find(r, "vec");
    QVERIFY(layoutImportance.importance > vec.importance);
    QVERIFY(vec.importance > find(r, "unroll").importance);
    QVERIFY(!layoutImportance.ordered);
    QVERIFY(layoutImportance.correlation > 0.9);  // η
    QVERIFY(vec.ordered);
    QVERIFY(vec.correlation < -0.3);  // true is faster
  }

  // Tile sizes that matter mostly together: log latency 0.5·(i + j - 3)² over BM = 16 << i and
  // BN = 16 << j, with R not mattering. The exact decomposition gives each of BM and BN a main
  // effect of 0.25 / 2.0625 = 12.1 % of the variance and leaves 76 % to their interaction; the
  // forest's fANOVA finds that, and the report says the rest is interactions.
  void interactionsAreNotMainEffects() {
    std::vector<Trial> trials;
    std::int64_t id = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        for (int rep = 0; rep < 4; ++rep)
          trials.push_back(trial(id++, {{"BM", 16 << i}, {"BN", 16 << j}, {"R", rep}},
                                 1000 * std::exp(0.5 * (i + j - 3) * (i + j - 3))));
    const ImportanceReport r = parameter_importance(trials, kKey, {"BM", "BN", "R"});
    QCOMPARE(r.status, ImportanceReport::Status::Ok);
    for (const char* tile : {"BM", "BN"})
      QVERIFY2(std::abs(find(r, tile).variance - 0.121) < 0.03, qPrintable(QString::number(find(r, tile).variance)));
    QVERIFY(find(r, "R").variance < 0.01);
    QVERIFY2(r.main_effects < 0.3, qPrintable(QString::number(r.main_effects)));
    QVERIFY(QString::fromStdString(r.message()).contains(QStringLiteral("interactions")));
  }

  // A parameter with one value cannot have mattered: importance 0, said to be fixed.
  void oneValueIsFixed() {
    std::vector<Trial> trials;
    for (int i = 0; i < 8; ++i)
      trials.push_back(trial(i, {{"BM", 16 << (i % 4)}, {"stages", 3}}, 1000.0 * (1 + i % 4)));
    const ImportanceReport r = parameter_importance(trials, kKey, {"BM", "stages"});
    QCOMPARE(r.status, ImportanceReport::Status::Ok);
    const ParameterImportance& stages = find(r, "stages");
    QVERIFY(stages.fixed());
    QCOMPARE(stages.values, std::size_t(1));
    QCOMPARE(stages.importance, 0.0);
    QCOMPARE(stages.variance, 0.0);
    QCOMPARE(stages.correlation, 0.0);
    QCOMPARE(find(r, "BM").importance, 1.0);
  }

  // Too few ok trials, one time for all, or nothing varying: a status and a sentence, no numbers.
  void notEnoughOrNothingToSay() {
    std::vector<Trial> one{trial(0, {{"BM", 16}}, 1000), trial(1, {{"BM", 32}}, 0, TrialStatus::LaunchError),
                           trial(2, {{"BM", 64}}, 900, TrialStatus::SlowAbort)};
    ImportanceReport r = parameter_importance(one, kKey, {"BM"});
    QCOMPARE(r.status, ImportanceReport::Status::NotEnoughTrials);
    QCOMPARE(r.trials, std::size_t(1));
    QCOMPARE(r.message(), std::string("not enough trials: 1 ok trial with a time, at least 2 needed"));
    QCOMPARE(find(r, "BM").importance, 0.0);
    r = parameter_importance({}, kKey, {"BM"});
    QCOMPARE(r.status, ImportanceReport::Status::NotEnoughTrials);

    std::vector<Trial> same;
    for (int i = 0; i < 4; ++i) same.push_back(trial(i, {{"BM", 16 << i}}, 1000));
    r = parameter_importance(same, kKey, {"BM"});
    QCOMPARE(r.status, ImportanceReport::Status::NoVariation);
    QVERIFY(QString::fromStdString(r.message()).contains(QStringLiteral("same time")));

    std::vector<Trial> fixedOnly{trial(0, {{"BM", 16}}, 1000), trial(1, {{"BM", 16}}, 2000)};
    r = parameter_importance(fixedOnly, kKey, {"BM"});
    QCOMPARE(r.status, ImportanceReport::Status::NoVariation);
    QVERIFY(QString::fromStdString(r.message()).contains(QStringLiteral("no parameter took more than one value")));
  }

  // More distinct configs than max_configs: a seeded sample of them, still ranked right.
  void largeRunsLearnFromASample() {
    ImportanceOptions o;
    o.max_configs = 24;
    const ImportanceReport r = parameter_importance(additive(1.0, 0.15), kKey, {"A", "B", "C"}, o);
    QCOMPARE(r.configs, std::size_t(60));
    QCOMPARE(r.learned, std::size_t(24));
    QVERIFY(find(r, "A").importance > find(r, "C").importance);
    QVERIFY(QString::fromStdString(r.message()).contains(QStringLiteral("a sample of 24")));
  }

  // A slice: per value, the ok trials' best, quartiles and slowest; slow_abort and failures
  // counted by status; pruned configs (never ran) and other shapes left out.
  void slicesSummariseEachValue() {
    std::vector<Trial> trials;
    std::int64_t id = 0;
    for (double ns : {1000.0, 2000.0, 3000.0, 4000.0, 5000.0}) trials.push_back(trial(id++, {{"BM", 16}}, ns));
    trials.push_back(trial(id++, {{"BM", 16}}, 800, TrialStatus::SlowAbort));
    trials.push_back(trial(id++, {{"BM", 16}}, 0, TrialStatus::CompileError));
    trials.push_back(trial(id++, {{"BM", 64}}, 0, TrialStatus::CompileError));
    trials.push_back(trial(id++, {{"BM", 64}}, 0, TrialStatus::WrongResult));
    trials.push_back(trial(id++, {{"BM", 64}}, 0, TrialStatus::CompileError));
    trials.push_back(trial(id++, {{"BM", 128}}, 0, TrialStatus::Pruned));
    trials.push_back(trial(id++, {{"BM", 32}}, 10, TrialStatus::Ok, "M=16,N=512,K=512,dtype=f32"));
    const std::vector<ParameterSlice> slices = parameter_slices(trials, kKey, {"BM"});
    QCOMPARE(slices.size(), std::size_t(1));
    const ParameterSlice& s = slices.front();
    QCOMPARE(s.values.size(), std::size_t(2));  // 16 and 64: 128 was only pruned, 32 another shape's
    const SliceValue& v16 = s.values[0];
    QCOMPARE(v16.value, ParamValue(16));
    QCOMPARE(v16.ok, std::size_t(5));
    QCOMPARE(v16.best_ns, 1000.0);
    QCOMPARE(v16.q1_ns, 2000.0);
    QCOMPARE(v16.median_ns, 3000.0);
    QCOMPARE(v16.q3_ns, 4000.0);
    QCOMPARE(v16.max_ns, 5000.0);
    QCOMPARE(v16.slow_abort, std::size_t(1));
    QCOMPARE(v16.slow_abort_best_ns, 800.0);
    QCOMPARE(v16.failed_total(), std::size_t(1));
    const SliceValue& v64 = s.values[1];
    QCOMPARE(v64.ok, std::size_t(0));
    QCOMPARE(v64.best_ns, 0.0);
    QCOMPARE(v64.failed_total(), std::size_t(3));
    QCOMPARE(v64.failed_text(), std::string("2 compile_error, 1 wrong_result"));
    QCOMPARE(s.ok(), std::size_t(5));
    QCOMPARE(s.failed(), std::size_t(4));
  }
};

QTEST_GUILESS_MAIN(TestParameterImportance)
#include "test_parameter_importance.moc"
