// `ktune apply --remeasure` on the CPU backend, as a user runs it: the registry's config and the
// run's are timed side by side, the diff shows the paired ratio, and bad uses exit 2.
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// The cpu gemm's parameters with one value each: one config, on the portable micro-kernel (vec=4,
// at most 16 vector registers), which every x86 machine runs.
QByteArray oneConfig(int mr, int nr) {
  return QString(
             "{\"parameters\": {\"MR\": [%1], \"NR\": [%2], \"vec\": [4], \"MC\": [48], \"KC\": [64], \"NC\": [64], "
             "\"loop_order\": [0], \"threads\": [1]}, \"constraints\": []}")
      .arg(mr)
      .arg(nr)
      .toUtf8();
}

}  // namespace

class TestCliRemeasure : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;

  Result tune(const QString& name, int mr, int nr, const QStringList& extra = {}) {
    const QString space = tmp.filePath(name + ".json");
    writeAll(space, oneConfig(mr, nr));
    return run(QStringList{"tune", "gemm", "--backend", "cpu", "--shape", "M=16 N=64 K=64", "--space", space,
                           "--run-name", name, "--output-dir", tmp.filePath("runs"), "--registry", tmp.filePath("reg"),
                           "--warmup-ms", "1", "--max-samples", "20", "-q"}
               << extra);
  }

 private slots:
  void initTestCase() { QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary"); }

  void remeasureTimesBothConfigsAndClassesFromThePair() {
    const Result a = tune("a", 4, 8, {"--update-registry", "--accept-flagged"});
    QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
    const Result b = tune("b", 6, 8);
    QVERIFY2(b.code == 0, qPrintable(b.out + b.err));

    const Result r =
        run({"apply", tmp.filePath("runs/b"), "--registry", tmp.filePath("reg"), "--remeasure", "--dry-run"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("re-measured M=16,N=64,K=64,dtype=f32 in alternation: registry config"), qPrintable(r.out));
    QVERIFY2(r.out.contains("paired re-measure"), qPrintable(r.out));
    QVERIFY(r.out.contains("dry run: nothing written"));

    // The registry's own run against the registry: the same config, nothing to time.
    const Result same =
        run({"apply", tmp.filePath("runs/a"), "--registry", tmp.filePath("reg"), "--remeasure", "--dry-run"});
    QVERIFY2(same.code == 0 && same.out.contains("nothing to time"), qPrintable(same.out + same.err));
    QVERIFY(run({"apply", "--help"}).out.contains("--remeasure"));
  }

  void remeasureOfAReplayedRunIsRefused() {
    // A replay's backend is not one this build has: apply --remeasure names the backend.
    const Result imp = run({"import", "kernel-tuner", KTUNE_SOURCE_DIR "/tests/data/kernel_tuner_matmul_cache.json",
                            "--run-name", "kt", "--output-dir", tmp.filePath("runs"), "--backend", "hip"});
    QVERIFY2(imp.code == 0, qPrintable(imp.err));
    const Result r = run({"apply", tmp.filePath("runs/kt"), "--registry", tmp.filePath("reg2"), "--remeasure"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("hip"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestCliRemeasure)
#include "test_cli_remeasure.moc"
