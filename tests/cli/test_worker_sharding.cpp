// A worker's family carries its tensor-parallel splits and shape rules in its hello, as a kernel
// spec does: `tune --worker ... --tp-size` tunes the local shape a worker offers a split for (a
// raw-protocol worker, RAW_FAMILY, and the built-in families through `ktune worker`), a worker's
// shape rule refuses a shape with its description, and malformed fields are protocol errors naming
// the JSON path.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// Attention's heads as a worker offers them: q heads divided, kv heads divided or replicated.
const char* kHeads = R"({"key_fields": [{"name": "n", "default": "8"}, {"name": "q_heads"}, {"name": "kv_heads"}],
  "tp_head_fields": ["q_heads", {"name": "kv_heads", "at_least_one": true}],
  "shape_rules": [{"expr": "mod(q_heads, kv_heads) == 0", "description": "q_heads must be a multiple of kv_heads"}]})";

Result rawTune(const QString& dir, const QString& family, const QStringList& more) {
  return run(QStringList{"tune", "--worker", rawWorker(), "--run-name", "tp", "--max-ms-per-config", "300",
                         "--remeasure-top", "0", "-q"} +
                 more,
             dir, envWith("RAW_FAMILY", family));
}

}  // namespace

class TestWorkerSharding : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 with numpy (apt-get install python3 python3-numpy)");
  }

  void aWorkersHeadSplitTunesTheLocalShape_data() {
    QTest::addColumn<QString>("tp");
    QTest::addColumn<QString>("key");
    QTest::newRow("both divided") << "2"
                                  << "n=8,q_heads=16,kv_heads=2,tp=2/heads";
    QTest::newRow("kv heads replicated") << "8"
                                         << "n=8,q_heads=4,kv_heads=1,tp=8/heads";
  }
  void aWorkersHeadSplitTunesTheLocalShape() {
    QFETCH(QString, tp);
    QFETCH(QString, key);
    QTemporaryDir dir;
    const Result r = rawTune(dir.path(), kHeads, {"--shape", "q_heads=32 kv_heads=4", "--tp-size", tp});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QStringList trials = trialKeys(dir.path(), "tuning_runs/tp");
    QCOMPARE(trials.size(), 4);
    for (const auto& t : trials) QVERIFY2(t.startsWith(key + " | "), qPrintable(t));
  }

  void aSplitTheWorkerDoesNotOfferIsRefusedNamingTheChoices() {
    QTemporaryDir dir;
    const Result r =
        rawTune(dir.path(), kHeads, {"--shape", "q_heads=32 kv_heads=4", "--tp-size", "2", "--tp-split-dim", "out"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("raw does not support --tp-split-dim out; use heads (divides q_heads, kv_heads)"),
             qPrintable(r.err));
  }

  void aWorkersShapeRuleRefusesABadShape() {
    QTemporaryDir dir;
    const Result r = rawTune(dir.path(), kHeads, {"--shape", "q_heads=32 kv_heads=6"});
    QCOMPARE(r.code, 2);
    QVERIFY2(
        r.err.contains("q_heads=32, kv_heads=6: q_heads must be a multiple of kv_heads (mod(q_heads, kv_heads) == 0)"),
        qPrintable(r.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs/tp").exists());
    // Checked on the local shape: 32 q over 8 kv heads at --tp-size 16 is 2 over 1.
    const Result local = rawTune(dir.path(), kHeads, {"--shape", "q_heads=32 kv_heads=8", "--tp-size", "16"});
    QVERIFY2(local.code == 0, qPrintable(local.out + local.err));
  }

  void malformedFieldsAreProtocolErrorsNamingThePath_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("error");
    QTest::newRow("head field unknown") << R"({"tp_head_fields": ["n", "heads"]})"
                                        << "hello.families.raw.tp_head_fields[1]: 'heads' must be a numeric key field";
    QTest::newRow("out field unknown") << R"({"tp_out_field": "N"})"
                                       << "hello.families.raw.tp_out_field: 'N' is not one of the key fields";
    QTest::newRow("rule over an unknown name") << R"({"shape_rules": [{"expr": "n <= max_n", "description": "small"}]})"
                                               << "hello.families.raw.shape_rules[0].expr: 'max_n' is not a key field";
  }
  void malformedFieldsAreProtocolErrorsNamingThePath() {
    QFETCH(QString, family);
    QFETCH(QString, error);
    QTemporaryDir dir;
    const Result r = rawTune(dir.path(), family, {"--shape", "n=8"});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(error), qPrintable(r.err));
  }

  // `ktune worker` offers its built-in families whole: gemm's out split through a worker.
  void builtInFamiliesSplitThroughKtuneWorker() {
    QTemporaryDir dir;
    const Result r = run({"tune",
                          "gemm",
                          "--worker",
                          cli() + " worker --backend cpu",
                          "--shape",
                          "M=8 N=64 K=32",
                          "--tp-size",
                          "2",
                          "--tp-split-dim",
                          "out",
                          "--strategy",
                          "random",
                          "--budget",
                          "2",
                          "--seed",
                          "1",
                          "--warmup-ms",
                          "1",
                          "--max-ms-per-config",
                          "1000",
                          "--remeasure-top",
                          "0",
                          "--run-name",
                          "gemm",
                          "-q"},
                         dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QStringList trials = trialKeys(dir.path(), "tuning_runs/gemm");
    QVERIFY(!trials.isEmpty());
    for (const auto& t : trials) QVERIFY2(t.startsWith("M=8,N=32,K=32,dtype=f32,tp=2/out | "), qPrintable(t));
  }
};

QTEST_GUILESS_MAIN(TestWorkerSharding)
#include "test_worker_sharding.moc"
