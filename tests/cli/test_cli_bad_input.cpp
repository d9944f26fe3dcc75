// Bad input through the CLI: exit 2 with the file and the field named, never a crash (exit -1
// here) or a raw library error (exit 1), and nothing measured: `space`, `tune --dry-run` and
// `tune` refuse the same --space alike.
#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// The cpu gemm's parameters with one value each, plus `extra` members and `constraints`.
QByteArray cpuGemmSpace(const QByteArray& extra = {}, const QByteArray& constraints = "[]") {
  return "{\"parameters\": {\"MR\": [6], \"NR\": [16], \"vec\": [4], \"MC\": [48], \"KC\": [64], \"NC\": [64], "
         "\"loop_order\": [0], \"threads\": [1]" +
         extra + "}, \"constraints\": " + constraints + "}";
}

const QString kShape = "M=16 N=64 K=64";

}  // namespace

class TestCliBadInput : public QObject {
  Q_OBJECT

  QTemporaryDir tmp;

  // The three commands that read --space, in that order.
  QList<QStringList> commands(const QString& space) const {
    const QStringList tune = {
        "tune", "gemm",         "--backend",          "cpu",        "--shape", kShape,        "--space",
        space,  "--output-dir", tmp.filePath("runs"), "--run-name", "refused", "--warmup-ms", "1"};
    return {{"space", "gemm", "--backend", "cpu", "--shape", kShape, "--space", space},
            QStringList(tune) << "--dry-run",
            tune};
  }

 private slots:
  void badSpaceIsRefusedByEveryCommand_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("needle");
    QTest::newRow("deep nesting") << QByteArray("{\"parameters\": {\"MR\": ") + QByteArray(200000, '[') +
                                         QByteArray(200000, ']') + "}}"
                                  << "nested deeper than 64";
    QTest::newRow("number overflow") << cpuGemmSpace(", \"X\": [1e400]") << "number overflow parsing '1e400'";
    QTest::newRow("wrong type") << QByteArray("{\"parameters\": {\"MR\": [6, \"8\"]}}")
                                << "parameters.MR[1]: expected an integer";
    QTest::newRow("unknown parameter") << cpuGemmSpace(", \"BM\": [64]") << "'BM' is not a parameter of gemm";
    QTest::newRow("missing parameter") << QByteArray("{\"parameters\": {\"MR\": [6]}}")
                                       << "parameter 'NR' of gemm is missing";
    QTest::newRow("all pruned") << cpuGemmSpace({}, "[\"MR > 100\"]") << "all 1 configs are pruned (most by 'MR > 100'";
    QTest::newRow("NaN constraint") << cpuGemmSpace({}, "[\"mod(MR, NR - 16) == 0\"]") << "mod(MR, NR - 16) == 0";
    QTest::newRow("too large") << QByteArray(
                                      "{\"parameters\": {\"MR\": {\"from\": 1, \"to\": 10000}, \"NR\": "
                                      "{\"from\": 1, \"to\": 10000}, \"vec\": [4], \"MC\": [48], \"KC\": [64], "
                                      "\"NC\": [64], \"loop_order\": [0], \"threads\": [1]}}")
                               << "100000000 configs before pruning";
  }
  void badSpaceIsRefusedByEveryCommand() {
    QFETCH(QByteArray, content);
    QFETCH(QString, needle);
    const QString space = tmp.filePath("bad_space.json");
    writeAll(space, content);
    for (const QStringList& args : commands(space)) {
      QElapsedTimer t;
      t.start();
      const Result r = run(args);
      QVERIFY2(r.code == 2, qPrintable(args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
      QVERIFY2(r.err.contains(needle), qPrintable(r.err));
      QVERIFY2(r.err.size() < 1000, qPrintable(r.err.left(1000)));
      QVERIFY2(t.elapsed() < 60000, qPrintable(args.join(' ')));  // refused before any planning
      QVERIFY2(!QDir(tmp.filePath("runs/refused")).exists(), "a refused tune left a run folder");
    }
  }

  void spaceFileThatIsADirectory() {
    for (const QStringList& args : commands(tmp.path())) {
      const Result r = run(args);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains("is a directory") && r.err.contains(tmp.path()), qPrintable(r.err));
    }
  }

  // 100,000 values for M planned 22 million trials in 215 s before the cap; 20,000 (as many as
  // fit in one argument) are refused at once (the bound: a quarter of that, on any host).
  void shapeListTooLongIsRefusedAtOnce() {
    QStringList m;
    for (int i = 1; i <= 20000; ++i) m << QString::number(i);
    QElapsedTimer t;
    t.start();
    const Result r =
        run({"tune", "gemm", "--backend", "cpu", "--shape", "M=" + m.join(',') + " N=64 K=64", "--dry-run"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("more than 10000 problems") && r.err.size() < 1000, qPrintable(r.err.left(1000)));
    QVERIFY(t.elapsed() < 60000);
  }

  // A registry entry at -5 ns was "same" as every real result and blocked it.
  void impossibleRegistryLatencyIsNamed() {
    const QString reg = tmp.filePath("reg");
    QDir().mkpath(reg + "/cpu");
    const QByteArray entry =
        "{\"config\": {\"MR\": 6}, \"stats\": {\"latency_avg_ns\": 10, \"latency_median_ns\": -5, \"latency_std_ns\": "
        "1, "
        "\"compile_time_s\": 0}, \"metadata\": {\"benchmarking_method\": \"amortized\", \"samples_ns\": [], \"run\": "
        "\"r\", "
        "\"tuned_at\": \"t\", \"ktune_version\": \"0.1.0\"}}";
    writeAll(reg + "/cpu/test.json",
             "{\"ktune_registry\": 1, \"backend\": \"cpu\", \"device\": \"test\", \"entries\": "
             "{\"gemm\": {\"M=16,N=64,K=64,dtype=f32\": " +
                 entry + "}}}");
    const Result r =
        run({"lookup", "gemm", "--backend", "cpu", "--shape", kShape, "--device-slug", "test", "--registry", reg});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("test.json") && r.err.contains("entries.gemm[\"M=16,N=64,K=64,dtype=f32\"].stats.latency_"
                                                           "median_ns: expected a positive number, got -5"),
             qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestCliBadInput)
#include "test_cli_bad_input.moc"
