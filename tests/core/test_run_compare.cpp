// compare_runs: two runs' winners paired by shape (two devices, two dates, before and after a
// kernel change), each pair compared as diff_run compares a run with the registry; shapes of
// one run alone listed as such; runs of another family or key fields refused, saying why.
#include <QtTest>
#include <algorithm>

#include "ktune/diff.h"
#include "ktune/error.h"
#include "ktune/run_store.h"

using namespace ktune;

namespace {

Problem gemm(int m, std::vector<std::pair<std::string, std::string>> extra = {}) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(m)}, {"N", "256"}, {"K", "256"}, {"dtype", "f32"}};
  p.fields.insert(p.fields.end(), extra.begin(), extra.end());
  return p;
}

// 21 samples spread evenly by ±rel_spread around `median` (which is their exact median).
std::vector<double> around(double median, double rel_spread) {
  std::vector<double> s;
  for (int i = -10; i <= 10; ++i) s.push_back(median * (1 + rel_spread * i / 10.0));
  return s;
}

ResultEntry result(const Problem& p, int bm, std::vector<double> samples) {
  ResultEntry r;
  r.problem = p;
  r.config = Config({{"BM", bm}, {"BN", 64}});
  r.stats = summarize(samples);
  r.samples_ns = std::move(samples);
  r.choice.search = r.stats;
  return r;
}

RunResults run(const std::string& name, std::vector<ResultEntry> entries, const std::string& family = "gemm") {
  RunResults r;
  r.run_name = name;
  r.family = family;
  r.backend = "cpu";
  r.device = "Test CPU";
  r.device_slug = "test-cpu";
  r.method = "amortized";
  r.state = "finished";
  r.entries = std::move(entries);
  return r;
}

// Before a kernel change: M=1, 2, 4 at 1000 ns; M=16 only here.
RunResults before() {
  return run("before", {result(gemm(1), 16, around(1000, 0.001)), result(gemm(2), 16, around(1000, 0.001)),
                        result(gemm(4), 16, around(1000, 0.001)), result(gemm(16), 16, around(900, 0.001))});
}
// After: M=1 faster (1.25x), M=2 slower (0.8x), M=4 the same (0.5 %), M=8 new, M=16 gone.
RunResults after() {
  return run("after", {result(gemm(8), 32, around(700, 0.001)), result(gemm(4), 32, around(1005, 0.001)),
                       result(gemm(2), 32, around(1250, 0.001)), result(gemm(1), 32, around(800, 0.001))});
}

const ComparedShape& shape(const RunComparison& c, int m) {
  const std::string key = gemm(m).key();
  const auto it = std::find_if(c.shapes.begin(), c.shapes.end(), [&](const ComparedShape& s) { return s.key == key; });
  if (it == c.shapes.end()) throw std::runtime_error("no shape " + key);
  return *it;
}

}  // namespace

class TestRunCompare : public QObject {
  Q_OBJECT

 private slots:
  void pairsWinnersByShape() {
    const RunComparison c = compare_runs(after(), before());
    QCOMPARE(c.shapes.size(), std::size_t(5));
    QCOMPARE(c.both, std::size_t(3));
    QCOMPARE(c.only_run, std::size_t(1));
    QCOMPARE(c.only_other, std::size_t(1));
    // Listed by key fields as numbers, whichever run has them.
    QStringList order;
    for (const ComparedShape& s : c.shapes) order << QString::fromStdString(s.key).section(',', 0, 0);
    QCOMPARE(order, (QStringList{"M=1", "M=2", "M=4", "M=8", "M=16"}));

    const ComparedShape& m1 = shape(c, 1);
    QVERIFY(m1.both());
    QCOMPARE(m1.cls, DiffClass::Faster);  // this run (after) is faster
    QCOMPARE(m1.ratio, 1000.0 / 800.0);   // the other's number over this run's
    QCOMPARE(m1.run_ns, 800.0);
    QCOMPARE(m1.other_ns, 1000.0);
    QCOMPARE(m1.run->config.get("BM"), ParamValue(32));
    QCOMPARE(m1.other->config.get("BM"), ParamValue(16));
    QCOMPARE(m1.other->run, std::string("before"));
    QCOMPARE(shape(c, 2).cls, DiffClass::Slower);
    QCOMPARE(shape(c, 4).cls, DiffClass::Same);

    const ComparedShape& only8 = shape(c, 8);
    QVERIFY(only8.run && !only8.other);
    QCOMPARE(only8.run_ns, 700.0);
    QCOMPARE(only8.ratio, 0.0);
    const ComparedShape& only16 = shape(c, 16);
    QVERIFY(!only16.run && only16.other);
    QCOMPARE(only16.other_ns, 900.0);
  }

  // Comparing the other way round turns faster into slower and swaps who has which shape alone.
  void directionIsThisRunAgainstTheOther() {
    const RunComparison c = compare_runs(before(), after());
    QCOMPARE(shape(c, 1).cls, DiffClass::Slower);
    QCOMPARE(shape(c, 2).cls, DiffClass::Faster);
    QVERIFY(!shape(c, 8).run && shape(c, 8).other);
    QVERIFY(shape(c, 16).run && !shape(c, 16).other);
  }

  // Noise widens "same": a 3 % difference between winners whose samples spread by ±20 % is noise.
  void noisyWinnersAreTheSame() {
    const RunResults a = run("a", {result(gemm(1), 16, around(1000, 0.2))});
    const RunResults b = run("b", {result(gemm(1), 32, around(1030, 0.2))});
    const ComparedShape s = compare_runs(a, b).shapes.front();
    QCOMPARE(s.cls, DiffClass::Same);
    QVERIFY(s.threshold > 0.03);
  }

  // Shapes pair by their fields' values, whatever order a run's keys list them in.
  void keyFieldOrderDoesNotMatter() {
    Problem reordered = gemm(1);
    std::reverse(reordered.fields.begin(), reordered.fields.end());
    const RunComparison c = compare_runs(run("a", {result(gemm(1), 16, around(1000, 0.001))}),
                                         run("b", {result(reordered, 32, around(800, 0.001))}));
    QCOMPARE(c.both, std::size_t(1));
    QCOMPARE(c.shapes.front().key, gemm(1).key());
  }

  // Winners timed at SM clocks more than 3 % apart: the verdict stands, and a note says the ratio
  // carries the clock; within 3 %, or where a run read no clock, nothing is said.
  void clocksApartAreSaid() {
    RunResults hot = after(), cool = before();
    for (ResultEntry& e : hot.entries) e.conditions[kSmClockMhz] = 1425;
    for (ResultEntry& e : cool.entries) e.conditions[kSmClockMhz] = e.problem.key() == gemm(4).key() ? 1440 : 1980;
    const RunComparison c = compare_runs(hot, cool);
    QCOMPARE(shape(c, 1).cls, DiffClass::Faster);
    QCOMPARE(shape(c, 1).conditions_note,
             std::string("the other run measured at 1980 MHz, this run at 1425 MHz: the ratio carries the clock"));
    QVERIFY(!shape(c, 2).conditions_note.empty());
    QVERIFY2(shape(c, 4).conditions_note.empty(), shape(c, 4).conditions_note.c_str());  // 1 % apart
    QVERIFY(shape(c, 8).conditions_note.empty());                                        // this run alone
    for (const ComparedShape& s : compare_runs(after(), before()).shapes) QVERIFY(s.conditions_note.empty());
  }

  void otherMethodIsNotComparable() {
    RunResults cold = before();
    cold.method = "per_launch";
    const RunComparison c = compare_runs(after(), cold);
    for (int m : {1, 2, 4}) QCOMPARE(shape(c, m).cls, DiffClass::NotComparable);
  }

  // Another family, other key fields, or a run without winners: refused, saying which and why.
  void nonsenseIsRefused() {
    const RunResults q = run("qm", {result(gemm(1), 16, around(1000, 0.001))}, "qmatmul");
    QString why = QString::fromStdString(comparison_mismatch(after(), q));
    QVERIFY2(why.contains("run qm tunes qmatmul") && why.contains("run after tunes gemm"), qPrintable(why));
    QVERIFY_THROWS_EXCEPTION(InputError, compare_runs(after(), q));

    const RunResults wider = run("wider", {result(gemm(1, {{"layout", "nt"}}), 16, around(1000, 0.001))});
    why = QString::fromStdString(comparison_mismatch(after(), wider));
    QVERIFY2(why.contains("M, N, K, dtype, layout") && why.contains("cannot be paired"), qPrintable(why));

    const RunResults empty = run("empty", {});
    why = QString::fromStdString(comparison_mismatch(after(), empty));
    QVERIFY2(why.contains("run empty has no winner"), qPrintable(why));
    QVERIFY(comparison_mismatch(after(), before()).empty());
  }

  void damagedMedianIsNamed() {
    RunResults broken = before();
    broken.entries[0].stats.median_ns = 0;
    try {
      compare_runs(after(), broken);
      QFAIL("a result without a median compared");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("run before: result M=1"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestRunCompare)
#include "test_run_compare.moc"
