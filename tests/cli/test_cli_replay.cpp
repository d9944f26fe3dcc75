// ktune import kernel-tuner and ktune tune --replay, as a user runs them: the run folder they
// make opens in diff and export, bad files exit 2 naming the field, replays repeat per seed,
// restrictions given at import and the cache's coverage of the space, sparse landscapes replayed.
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "../core/kernel_tuner_fixture.h"
#include "cli_support.h"

namespace {

const QString kData = QStringLiteral(KTUNE_SOURCE_DIR "/tests/data/");

// The "best configs" table row of a tune's output.
QString best_row(const QString& out) {
  for (const QString& line : out.split('\n'))
    if (line.startsWith("x=4096,y=4096")) return line.simplified();
  return {};
}

QString results_best(const QString& run_dir) {
  const QJsonObject r = QJsonDocument::fromJson(readAll(run_dir + "/results.json")).object();
  const QJsonObject config = r["results"].toArray().first().toObject()["config"].toObject();
  QStringList parts;
  for (const char* p : {"block_size_x", "block_size_y", "tile_size_x", "tile_size_y"})
    parts << QString("%1=%2").arg(p).arg(config[p].toInt());
  return parts.join(',');
}

}  // namespace

class TestCliReplay : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QString runs;

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary");
    runs = tmp.filePath("runs");
  }

  void importsAClosedCacheThatDiffAndExportOpen() {
    const Result r = run({"import", "kernel-tuner", kData + "kernel_tuner_matmul_cache.json", "--run-name", "kt",
                          "--output-dir", runs, "--family", "matmul"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("imported 240 configs"), qPrintable(r.out));
    QVERIFY(r.out.contains("compile_error") && r.out.contains("launch_error") && r.out.contains("pruned"));
    for (const char* f : {"run_metadata.json", "trials.csv", "results.json"})
      QVERIFY(QFileInfo::exists(runs + "/kt/" + f));
    // The folder the cache path on the recorded command line starts from.
    QCOMPARE(QJsonDocument::fromJson(readAll(runs + "/kt/run_metadata.json")).object()["working_directory"].toString(),
             QDir::currentPath());
    const Result csv = run({"export", runs + "/kt", "--format", "csv"});
    QCOMPARE(csv.code, 0);
    QVERIFY(csv.out.section('\n', 0, 0).endsWith("metrics,config,rel_error,vs_best"));
    QVERIFY(csv.out.contains("GFLOP/s") && csv.out.contains("energy") && csv.out.contains("power"));
    const Result json = run({"export", runs + "/kt", "--format", "json"});
    QCOMPARE(json.code, 0);
    const QJsonArray trials = QJsonDocument::fromJson(json.out.toUtf8()).object()["trials"].toArray();
    QCOMPARE(trials.size(), 240);
    const Result diff = run({"diff", runs + "/kt", "--registry", tmp.filePath("registry")});
    QVERIFY2(diff.code == 0 && diff.out.contains("new"), qPrintable(diff.out + diff.err));
    // A second import into the same folder is refused rather than mixed in.
    QCOMPARE(run({"import", "kernel-tuner", kData + "kernel_tuner_matmul_cache.json", "--run-name", "kt",
                  "--output-dir", runs})
                 .code,
             2);
  }

  void importsACacheStillBeingWritten() {
    const Result r = run({"import", "kernel-tuner", kData + "kernel_tuner_matmul_cache_live.json", "--run-name", "live",
                          "--output-dir", runs});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("imported 50 configs"), qPrintable(r.out));
  }

  void malformedCacheExitsTwoNamingTheProblem() {
    const QString bad = tmp.filePath("bad.json");
    QByteArray text = readAll(kData + "kernel_tuner_matmul_cache.json");
    writeAll(bad, text.replace("\"tune_params_keys\"", "\"keys\""));
    const Result r = run({"import", "kernel-tuner", bad, "--run-name", "bad", "--output-dir", runs});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(bad) && r.err.contains("tune_params_keys"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(runs + "/bad"));
    writeAll(bad, "[1, 2");
    const Result j = run({"import", "kernel-tuner", bad, "--run-name", "bad", "--output-dir", runs});
    QCOMPARE(j.code, 2);
    QVERIFY2(j.err.contains("not valid JSON"), qPrintable(j.err));
  }

  void replayRepeatsPerSeedAndFindsTheRecordedBest() {
    const QString kt = runs + "/kt";
    QVERIFY(QFileInfo::exists(kt + "/results.json"));  // from importsAClosedCacheThatDiffAndExportOpen
    const QStringList random = {"tune", "--replay", kt, "--strategy", "random", "--budget", "30", "-q"};
    const Result a = run(QStringList(random) << "--seed"
                                             << "5"
                                             << "--no-save");
    const Result b = run(QStringList(random) << "--seed"
                                             << "5"
                                             << "--no-save");
    QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
    QVERIFY(!best_row(a.out).isEmpty());
    QCOMPARE(best_row(a.out), best_row(b.out));

    const Result all = run({"tune", "--replay", kt, "--run-name", "replayed", "--output-dir", runs, "-q"});
    QVERIFY2(all.code == 0, qPrintable(all.out + all.err));
    QVERIFY2(best_row(all.out).contains(results_best(kt)), qPrintable(all.out + " vs " + results_best(kt)));
    QCOMPARE(results_best(runs + "/replayed"), results_best(kt));
    QCOMPARE(
        QJsonDocument::fromJson(readAll(runs + "/replayed/run_metadata.json")).object()["working_directory"].toString(),
        QDir::currentPath());
  }

  // The genetic and model-based strategies on a replayed landscape: the same seed gives the same
  // best, and the best few are re-measured (on a replay: the recorded samples drawn again).
  void newStrategiesReplayPerSeedAndRemeasure() {
    const QString kt = runs + "/kt";
    for (const char* kind : {"genetic", "bayes"}) {
      const QStringList args = {"tune", "--replay", kt,  "--strategy", kind, "--budget",
                                "40",   "--seed",   "2", "--no-save",  "-q"};
      const Result a = run(args);
      QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
      QVERIFY(!best_row(a.out).isEmpty());
      QCOMPARE(best_row(a.out), best_row(run(args).out));
      QVERIFY2(a.out.contains("re-measured in alternation"), qPrintable(a.out));
      const Result off = run(QStringList(args) << "--remeasure-top"
                                               << "0");
      QVERIFY2(off.code == 0 && !off.out.contains("re-measured"), qPrintable(off.out + off.err));
    }
  }

  void badTimeBudgetsExitTwo() {
    const QString kt = runs + "/kt";
    for (const char* bad : {"abc", "-5s", "5x", "10 m", "inf"}) {
      const Result r = run({"tune", "--replay", kt, QString("--time-budget=%1").arg(bad), "--no-save", "-q"});
      QVERIFY2(r.code == 2, qPrintable(QString(bad) + ": " + r.err));
      QVERIFY2(r.err.contains("time budget") && r.err.contains("60s"), qPrintable(r.err));
    }
    const Result top = run({"tune", "--replay", kt, "--remeasure-top=-1", "--no-save", "-q"});
    QCOMPARE(top.code, 2);
    QVERIFY2(top.err.contains("--remeasure-top"), qPrintable(top.err));
    for (const char* good : {"5m", "90", "1.5h"}) {
      const Result r = run({"tune", "--replay", kt, "--time-budget", good, "--no-save", "-q"});
      QVERIFY2(r.code == 0, qPrintable(QString(good) + ": " + r.err));
    }
    const QString help = run({"tune", "--help"}).out;
    for (const char* word : {"--time-budget", "--remeasure-top", "genetic", "bayes", "--resume the time"})
      QVERIFY2(help.contains(word), word);
  }

  // 60 configs recorded of 3,840: the import says so, and a replay searches the 60, not the product.
  void sparseCacheCoverageAndReplay() {
    const QString cache = tmp.filePath("sparse.json");
    writeAll(cache, QByteArray::fromStdString(
                        ktune::test::kernel_tuner_text(ktune::test::sparse_kernel_tuner_cache(60).json, false)));
    const Result plain = run({"import", "kernel-tuner", cache, "--run-name", "sparse", "--output-dir", runs});
    QVERIFY2(plain.code == 0, qPrintable(plain.out + plain.err));
    QVERIFY2(plain.out.contains("space: 3840 configs (the product of tune_params: the file holds no restrictions; "
                                "give them with --constraint or --space); the cache covers 60 of them (1.56 %)"),
             qPrintable(plain.out));

    const Result r = run({"tune", "--replay", runs + "/sparse", "--strategy", "random", "--budget", "20", "--seed", "3",
                          "--run-name", "sparse_replay", "--output-dir", runs});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2((r.out + r.err).contains("space 60 configs"), qPrintable(r.out + r.err));
    const QByteArray trials = readAll(runs + "/sparse_replay/trials.csv");
    QCOMPARE(trials.count('\n'), 21);  // the header and 20 trials
    QVERIFY2(!trials.contains("not in the recorded landscape"), trials.constData());

    const QString space = tmp.filePath("restrictions.json");
    writeAll(space, R"({"parameters": {"block_size_x": [16, 32, 64, 128, 256], "block_size_y": [1, 2, 4, 8, 16, 32],
      "tile_size_x": [1, 2, 4, 8], "tile_size_y": [1, 2, 4, 8], "loop_unroll_factor": [0, 1, 2, 4],
      "use_shared_mem": [0, 1]}, "constraints": ["block_size_x * block_size_y <= 1024"]})");
    const Result restricted =
        run({"import", "kernel-tuner", cache, "--run-name", "restricted", "--output-dir", runs, "--space", space,
             "--constraint", "block_size_x*block_size_y >= 64", "--constraint", "use_shared_mem == 1"});
    QVERIFY2(restricted.code == 0, qPrintable(restricted.out + restricted.err));
    QVERIFY2(restricted.out.contains(QRegularExpression("space: 3840 configs, \\d+ under the restrictions; the cache "
                                                        "covers \\d+ of them \\(\\d+\\.\\d\\d %\\)")),
             qPrintable(restricted.out));
    QVERIFY2(restricted.out.contains("recorded configs violate the restrictions, yet Kernel Tuner ran them") &&
                 restricted.out.contains("pruned by use_shared_mem == 1"),
             qPrintable(restricted.out));
    QVERIFY2(restricted.out.contains("InvalidConfig entries fall outside the restrictions"),
             qPrintable(restricted.out));

    const Result bad = run({"import", "kernel-tuner", cache, "--run-name", "bad_restriction", "--output-dir", runs,
                            "--constraint", "block_size_x and block_size_y"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("block_size_x and block_size_y"), qPrintable(bad.err));
    const QString help = run({"import", "kernel-tuner", "--help"}).out;
    for (const char* word : {"--constraint", "--space", ".json.gz", "covers"}) QVERIFY2(help.contains(word), word);
  }

  void replayRefusesWhatTheRunDecides() {
    const Result r = run({"tune", "gemm", "--replay", runs + "/kt"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--replay takes the family"), qPrintable(r.err));
    QCOMPARE(run({"tune", "--replay", tmp.filePath("nowhere")}).code, 2);
    const Result resume = run({"tune", "--replay", runs + "/kt", "--resume", "--run-name", "kt"});
    QCOMPARE(resume.code, 2);
    QVERIFY2(resume.err.contains("do not apply"), qPrintable(resume.err));
    const Result help = run({"--help"});
    QVERIFY(help.out.contains("import"));
    QVERIFY(run({"tune", "--help"}).out.contains("--replay"));
    QVERIFY(run({"import", "kernel-tuner", "--help"}).out.contains("InvalidConfig"));
  }
};

QTEST_GUILESS_MAIN(TestCliReplay)
#include "test_cli_replay.moc"
