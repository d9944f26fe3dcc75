// The worker protocol's schema (docs/worker-protocol.schema.json), its docs and the code agree:
// real transcripts of both directions, recorded between ktune and three kinds of worker (the
// built-in `ktune worker`, a python/ktune_worker one with integer, boolean and string parameters
// and failing configs, a raw-protocol one that refuses `sample` and offers a tensor-parallel split
// and a shape rule), and the example messages of the docs, are checked against the schema by
// tests/cli/validate_transcript.py (python3-jsonschema).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// `--worker` for CMD with every line of both directions appended to LOG.
QString recorded(const QString& log, const QString& command) {
  return python() + " " + source("tests/cli/protocol_tee.py") + " " + log + " " + command;
}

}  // namespace

class TestWorkerTranscripts : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 with numpy (apt-get install python3 python3-numpy)");
  }

  void transcriptsAndDocsMatchTheSchema() {
    QTemporaryDir dir;
    const QString builtIn = dir.path() + "/builtin.log", kw = dir.path() + "/ktune_worker.log",
                  raw = dir.path() + "/raw.log";
    const Result b = run({"tune", "gemm", "--worker", recorded(builtIn, cli() + " worker --backend cpu"), "--shape",
                          "M=16 N=64 K=64", "--strategy", "random", "--budget", "3", "--seed", "1", "--warmup-ms", "1",
                          "--max-ms-per-config", "1000", "--run-name", "builtin", "-q"},
                         dir.path());
    QVERIFY2(b.code == 0, qPrintable(b.out + b.err));
    // x=3 fails to build and x=2 with order "ji" is wrong: `failed` answers, and the run says so.
    const Result k =
        run({"tune", "--worker", recorded(kw, python() + " " + source("tests/cli/protocol_worker.py")), "--shape",
             "n=8 dtype=f32", "--warmup-ms", "1", "--max-ms-per-config", "2000", "--run-name", "kw", "-q"},
            dir.path());
    QVERIFY2(k.code == 1 && k.out.contains("wrong_result"), qPrintable(k.out + k.err));
    // The raw worker offers attention's heads split and a shape rule, and is tuned on a shard of them.
    const Result r = run(
        {"tune", "--worker", recorded(raw, rawWorker()), "--shape", "n=8 q_heads=32 kv_heads=4", "--tp-size", "8",
         "--max-ms-per-config", "300", "--run-name", "raw", "-q"},
        dir.path(), envWith("RAW_FAMILY", R"({"key_fields": [{"name": "n"}, {"name": "q_heads"}, {"name": "kv_heads"}],
                           "tp_head_fields": ["q_heads", {"name": "kv_heads", "at_least_one": true}],
                           "shape_rules": [{"expr": "mod(q_heads, kv_heads) == 0", "description": "GQA"}]})"));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));

    QProcess check;
    check.setProcessChannelMode(QProcess::MergedChannels);
    check.start(python(), {source("tests/cli/validate_transcript.py"), source("docs/worker-protocol.schema.json"),
                           "--doc", source("docs/worker-protocol.md"), "--doc", source("python/ktune_worker/README.md"),
                           "--require", builtIn, kw, raw});
    QVERIFY(check.waitForFinished(120000));
    const QString said = QString::fromUtf8(check.readAll());
    QVERIFY2(check.exitStatus() == QProcess::NormalExit && check.exitCode() == 0, qPrintable(said));
  }
};

QTEST_GUILESS_MAIN(TestWorkerTranscripts)
#include "test_worker_transcripts.moc"
