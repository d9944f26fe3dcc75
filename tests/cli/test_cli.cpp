// The ktune CLI end to end on the CPU backend: real tunes, run folders, diff/apply, lookup,
// export, resume after SIGKILL, and exit code 2 with a clear message for every bad input.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <map>

#include "cli_support.h"

namespace {

// Data rows of a trials.csv (header excluded), as (problem, config) identities.
QStringList trialRows(const QString& csv) {
  QStringList lines = QString::fromUtf8(readAll(csv)).split('\n', Qt::SkipEmptyParts);
  if (!lines.isEmpty()) lines.removeFirst();
  return lines;
}

// Splits one CSV line, honouring double quotes (problem keys contain commas).
QStringList csvSplit(const QString& line) {
  QStringList out;
  QString cur;
  bool quoted = false;
  for (int i = 0; i < line.size(); ++i) {
    const QChar c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cur += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out << cur;
      cur.clear();
    } else {
      cur += c;
    }
  }
  out << cur;
  return out;
}

// A generous cap: under ASan on a loaded 2-core CI machine a 2-thread launch of a tiny GEMM
// waits for time slices and takes milliseconds; these tests are about files, not timing.
const QStringList kSmallTune = {
    "tune", "gemm",   "--backend", "cpu",         "--shape", "M=16,64 N=64 K=64",   "--strategy", "random", "--budget",
    "4",    "--seed", "3",         "--warmup-ms", "1",       "--max-ms-per-config", "1000"};

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QString runs, registry;

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary");
    runs = tmp.filePath("runs");
    registry = tmp.filePath("tuned_data");
  }

  void helpAndUsage() {
    QCOMPARE(run({"--help"}).code, 0);
    const Result none = run({});
    QCOMPARE(none.code, 2);
    const Result bad = run({"tune", "gemm", "--no-such-flag"});
    QCOMPARE(bad.code, 2);
    QVERIFY(bad.err.contains("no-such-flag"));
  }

  void devicesAndKernels() {
    const Result d = run({"devices"});
    QCOMPARE(d.code, 0);
    QVERIFY(d.out.contains("cpu: 1 device"));
    QVERIFY(d.out.contains("l2_bytes"));
    const Result k = run({"kernels"});
    QCOMPARE(k.code, 0);
    QVERIFY(k.out.contains("gemm"));
    QVERIFY(k.out.contains("qmatmul"));
  }

  void spaceShowsCounts() {
    const Result r = run({"space", "gemm", "--backend", "cpu", "--shape", "M=16 N=512 K=512"});
    QCOMPARE(r.code, 0);
    QVERIFY2(QRegularExpression("\\d+ configs, \\d+ after pruning").match(r.out).hasMatch(), qPrintable(r.out));
    const Result noShape = run({"space", "gemm", "--backend", "cpu"});
    QCOMPARE(noShape.code, 0);
    QVERIFY(noShape.out.contains("give --shape"));
    const Result j = run({"space", "gemm", "--backend", "cpu", "--json"});
    QCOMPARE(j.code, 0);
    QVERIFY(QJsonDocument::fromJson(j.out.toUtf8()).object().contains("parameters"));
  }

  // grouped_gemm: one space per pass, each counted on its own (fwd keeps more blocks than dX, dX
  // than dW); both permutes pruned by Unsloth's rule; a pass it does not know is bad input. On
  // this machine, and on a synthetic one whose caches bind no block (a small last-level cache
  // can prune fwd's and dX's larger blocks down to dW's count).
  void spaceShowsEachMoePass() {
    const QString shape = "experts=8 tokens=100 topk=2 hidden=200 intermediate=2048 pass=";
    for (const QString& spec : {QString(), QString("l1d=48K l2=2M l3=105M cores=4 threads=8 isa=portable")}) {
      auto env = QProcessEnvironment::systemEnvironment();
      if (!spec.isNull()) env.insert("KTUNE_CPU_DEVICE", spec);
      const Result r = run({"space", "grouped_gemm", "--backend", "cpu", "--shape", shape + "fwd,dX,dW"}, {}, env);
      QCOMPARE(r.code, 0);
      std::map<QString, int> valid;
      const QRegularExpression line("pass=(\\w+) on [^:]+: (\\d+) configs, (\\d+) after pruning");
      for (auto it = line.globalMatch(r.out); it.hasNext();) {
        const auto m = it.next();
        valid[m.captured(1)] = m.captured(3).toInt();
      }
      QCOMPARE(valid.size(), std::size_t(3));
      QVERIFY2(valid["fwd"] >= valid["dX"] && valid["dX"] >= valid["dW"] && valid["dW"] > 0, qPrintable(r.out));
      if (!spec.isNull()) QVERIFY2(valid["fwd"] > valid["dX"] && valid["dX"] > valid["dW"], qPrintable(r.out));
      QCOMPARE(r.out.count("pruned by !(permute_x && permute_y)"), 3);
      QVERIFY(r.out.contains("never both"));
    }
    const Result bad = run({"space", "grouped_gemm", "--backend", "cpu", "--shape", shape + "foo"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("choices: fwd, dX, dW"), qPrintable(bad.err));
  }

  void dryRunWritesNothing() {
    const Result r = run(QStringList(kSmallTune) << "--dry-run"
                                                 << "--output-dir" << runs << "--run-name"
                                                 << "dry");
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("8 trials"));
    QVERIFY(!QDir(runs + "/dry").exists());
  }

  void tuneDiffApplyLookup() {
    const Result t = run(QStringList(kSmallTune) << "--run-name"
                                                 << "t1"
                                                 << "--output-dir" << runs << "--registry" << registry);
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    QVERIFY(t.out.contains("best configs"));
    QVERIFY(t.out.contains("M=16,N=64,K=64,dtype=f32"));
    QVERIFY(t.out.contains("run saved in"));
    for (const char* f : {"run_metadata.json", "trials.csv", "results.json"}) QVERIFY(QFile::exists(runs + "/t1/" + f));
    QCOMPARE(trialRows(runs + "/t1/trials.csv").filter(QRegularExpression(",ok,|,slow_abort,|,timeout,")).size() > 0,
             true);

    const Result d = run({"diff", runs + "/t1", "--registry", registry});
    QCOMPARE(d.code, 0);
    QCOMPARE(d.out.count(QRegularExpression("^new ", QRegularExpression::MultilineOption)), 2);

    const Result a = run({"apply", runs + "/t1", "--registry", registry, "--accept-flagged"});
    QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
    const QStringList files = QDir(registry + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const QString regFile = registry + "/cpu/" + files[0];
    const QByteArray before = readAll(regFile);
    const auto doc = QJsonDocument::fromJson(before).object();
    QVERIFY(doc["entries"].toObject()["gemm"].toObject().contains("M=16,N=64,K=64,dtype=f32"));

    // Applying the same run again changes nothing.
    const Result again = run({"apply", runs + "/t1", "--registry", registry, "--accept-flagged"});
    QCOMPARE(again.code, 0);
    QVERIFY(again.out.contains("unchanged"));
    QCOMPARE(readAll(regFile), before);

    const Result exact =
        run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape", "M=16 N=64 K=64"});
    QCOMPARE(exact.code, 0);
    QVERIFY(exact.out.contains("(exact"));
    const Result bucket =
        run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape", "M=50 N=64 K=64"});
    QVERIFY2(bucket.out.contains("(nearest bucket M=64,N=64,K=64,dtype=f32"), qPrintable(bucket.out));
    const Result dflt =
        run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape", "M=20 N=128 K=64"});
    QVERIFY(dflt.out.contains("(default"));
    QVERIFY(dflt.err.contains("ktune tune gemm"));
    QVERIFY(dflt.err.contains("M=20,N=128"));
    QVERIFY2(dflt.err.contains("most common best config"), qPrintable(dflt.err));
    // Entries record the versions they were measured with.
    const auto entry = doc["entries"].toObject()["gemm"].toObject()["M=16,N=64,K=64,dtype=f32"].toObject();
    QVERIFY(entry["metadata"].toObject()["versions"].toObject().contains("cpu_compiler"));
  }

  void exportRoundTrips() {
    const QString csv = tmp.filePath("t1.csv"), json = tmp.filePath("t1.json");
    QCOMPARE(run({"export", runs + "/t1", "--format", "csv", "-o", csv}).code, 0);
    QCOMPARE(run({"export", runs + "/t1", "--format", "json", "-o", json}).code, 0);
    QCOMPARE(trialRows(csv).size(), trialRows(runs + "/t1/trials.csv").size());
    const auto obj = QJsonDocument::fromJson(readAll(json)).object();
    QVERIFY(!obj.isEmpty());
    QCOMPARE(run({"export", runs + "/t1", "--format", "xml"}).code, 2);
  }

  void noValidConfigIsWorthAttention() {
    const Result r = run(QStringList(kSmallTune) << "--no-save"
                                                 << "--atol"
                                                 << "0"
                                                 << "--rtol"
                                                 << "0");
    QCOMPARE(r.code, 1);
    QVERIFY(r.out.contains("wrong_result"));
  }

  void badInputsExitTwoAndOverwriteNothing_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("needle");
    QTest::newRow("unknown kernel") << QStringList{"tune", "gemmm", "--shape", "M=1 N=8 K=8", "--no-save"}
                                    << "unknown kernel";
    QTest::newRow("unknown backend") << QStringList{"tune", "gemm", "--backend", "tpu", "--shape", "M=1 N=8 K=8"}
                                     << "unknown backend";
    QTest::newRow("bad shape") << QStringList{"tune", "gemm", "--shape", "M=1 N=8 Q=8", "--no-save"} << "no field 'Q'";
    QTest::newRow("no shape") << QStringList{"tune", "gemm", "--no-save"}
                              << "--shape \"M=4096 N=4096 K=4096 dtype=f32\") to tune: gemm has no default for M, N, K";
    QTest::newRow("bad method") << QStringList{"tune",     "gemm",  "--shape",  "M=1 N=8 K=8",
                                               "--method", "xprof", "--no-save"}
                                << "--method";
    QTest::newRow("bad strategy") << QStringList{"tune",       "gemm",  "--shape",  "M=1 N=8 K=8",
                                                 "--strategy", "magic", "--no-save"}
                                  << "strategy";
    QTest::newRow("bad noise") << QStringList{"tune",           "gemm", "--shape",  "M=1 N=8 K=8",
                                              "--noise-target", "2",    "--no-save"}
                               << "noise";
    QTest::newRow("tp without dim") << QStringList{"tune",      "gemm", "--shape",  "M=1 N=8 K=8",
                                                   "--tp-size", "2",    "--no-save"}
                                    << "tp-split-dim";
    QTest::newRow("missing run") << QStringList{"diff", "/nonexistent/run"} << "/nonexistent/run";
    QTest::newRow("missing space") << QStringList{"tune",        "gemm",    "--shape",
                                                  "M=1 N=8 K=8", "--space", "/nonexistent.json",
                                                  "--no-save"}
                                   << "nonexistent.json";
  }
  void badInputsExitTwoAndOverwriteNothing() {
    QFETCH(QStringList, args);
    QFETCH(QString, needle);
    const Result r = run(args, tmp.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(needle), qPrintable(r.err));
    QVERIFY(r.err.startsWith("ktune: error:") || r.err.contains("rror"));
  }

  void malformedFilesExitTwo() {
    // A malformed search space file.
    const QString space = tmp.filePath("bad_space.json");
    writeAll(space, "{\"parameters\": {\"MC\": [64,]}}");
    Result r = run(QStringList(kSmallTune) << "--space" << space << "--no-save");
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("bad_space.json"));

    // A malformed registry: apply refuses and leaves the file as it was.
    const QString reg = tmp.filePath("badreg");
    QDir().mkpath(reg + "/cpu");
    const QStringList files = QDir(registry + "/cpu").entryList({"*.json"}, QDir::Files);
    QVERIFY(!files.isEmpty());
    const QString regFile = reg + "/cpu/" + files[0];
    writeAll(regFile, "{\"ktune_registry\": 1, \"entries\": [oops");
    r = run({"apply", runs + "/t1", "--registry", reg, "--accept-flagged"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains(files[0]));
    QCOMPARE(readAll(regFile), QByteArray("{\"ktune_registry\": 1, \"entries\": [oops"));

    // A malformed results.json.
    QDir().mkpath(tmp.filePath("badrun"));
    QFile::copy(runs + "/t1/run_metadata.json", tmp.filePath("badrun/run_metadata.json"));
    writeAll(tmp.filePath("badrun/results.json"), "{\"results\": 3}");
    r = run({"diff", tmp.filePath("badrun")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("results.json"));

    // A malformed trials.csv: resume refuses and leaves it alone.
    const QString copy = tmp.filePath("runs/t1copy");
    QDir().mkpath(copy);
    for (const char* f : {"run_metadata.json", "results.json"}) QFile::copy(runs + "/t1/" + f, copy + "/" + f);
    QByteArray csv = readAll(runs + "/t1/trials.csv");
    csv.replace(",ok,", ",okay,");
    writeAll(copy + "/trials.csv", csv);
    r = run(QStringList(kSmallTune) << "--run-name"
                                    << "t1copy"
                                    << "--output-dir" << runs << "--resume");
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("trials.csv"), qPrintable(r.err));
    QCOMPARE(readAll(copy + "/trials.csv"), csv);

    // A second run under an existing name is refused rather than mixed in.
    r = run(QStringList(kSmallTune) << "--run-name"
                                    << "t1"
                                    << "--output-dir" << runs);
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--resume"));
  }

  // --seed steers the search alone; the inputs come from --workload-seed (0 unless given), as the
  // workbench keeps its strategy seed and workload seed apart: a MoE routing drawn from another
  // seed can read other experts' weights, so a search repeated with another --seed would have
  // timed other work.
  void searchSeedLeavesTheWorkloadAlone() {
    struct Case {
      QStringList options;
      qint64 workload, strategy;
    } cases[] = {
        {{"--seed", "3"}, 0, 3}, {{"--seed", "3", "--workload-seed", "5"}, 5, 3}, {{"--workload-seed", "5"}, 5, 0}};
    int i = 0;
    for (const Case& c : cases) {
      const QString name = QString("seeds%1").arg(i++);
      const Result t = run(QStringList{"tune", "gemm", "--backend", "cpu", "--shape", "M=16 N=64 K=64", "--strategy",
                                       "random", "--budget", "2", "--warmup-ms", "1", "--max-ms-per-config", "1000",
                                       "--run-name", name, "--output-dir", runs, "--quiet"}
                           << c.options);
      QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
      const QJsonObject meta = QJsonDocument::fromJson(readAll(runs + "/" + name + "/run_metadata.json")).object();
      QCOMPARE(meta["seed"].toInteger(), c.workload);
      QCOMPARE(meta["strategy"].toObject()["seed"].toInteger(), c.strategy);
    }
  }

  void resumeTakesTheRunsSettings() {
    const QString dir = runs + "/r2";
    const Result t = run(QStringList(kSmallTune) << "--run-name"
                                                 << "r2"
                                                 << "--output-dir" << runs << "--quiet");
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const QByteArray meta = readAll(dir + "/run_metadata.json"), results = readAll(dir + "/results.json");
    const QStringList trials = trialRows(dir + "/trials.csv");
    // Only measured configs are rows; the pruned ones are counted per constraint in the metadata.
    QCOMPARE(trials.size(), 8);
    QCOMPARE(trials.filter(",pruned,").size(), 0);
    QVERIFY(QJsonDocument::fromJson(meta).object()["pruning"].toArray().size() == 2);

    // Options that differ from the run: exit 2 naming the option and the run's value, nothing written.
    const QStringList resume = {"tune", "--resume", "--run-name", "r2", "--output-dir", runs, "--quiet"};
    const Result shape = run(QStringList(resume) << "--shape"
                                                 << "M=16 N=64 K=64");
    QCOMPARE(shape.code, 2);
    QVERIFY2(shape.err.contains(
                 "--shape differs from the run's: run has M=16,N=64,K=64,dtype=f32; M=64,N=64,K=64,dtype=f32"),
             qPrintable(shape.err));
    const Result budget = run(QStringList(resume) << "--budget"
                                                  << "5");
    QCOMPARE(budget.code, 2);
    QVERIFY2(budget.err.contains("--budget differs from the run's: run has 4"), qPrintable(budget.err));
    const Result method = run(QStringList(resume) << "--method"
                                                  << "per_launch");
    QCOMPARE(method.code, 2);
    QVERIFY2(method.err.contains("--method differs"), qPrintable(method.err));
    const Result workload = run(QStringList(resume) << "--workload-seed"
                                                    << "3");
    QCOMPARE(workload.code, 2);
    QVERIFY2(workload.err.contains("--workload-seed differs from the run's: run has 0"), qPrintable(workload.err));
    const Result seed = run(QStringList(resume) << "--seed"
                                                << "0");
    QCOMPARE(seed.code, 2);
    QVERIFY2(seed.err.contains("--seed differs from the run's: run has 3"), qPrintable(seed.err));
    const Result family = run(QStringList(resume) << "qmatmul");
    QCOMPARE(family.code, 2);
    QCOMPARE(readAll(dir + "/run_metadata.json"), meta);
    QCOMPARE(readAll(dir + "/results.json"), results);

    // No other option, or the run's own values: the run continues as it was (here: nothing left).
    const Result plain = run(resume);
    QVERIFY2(plain.code == 0, qPrintable(plain.out + plain.err));
    const Result same = run(QStringList(resume) << "--shape"
                                                << "M=64,16 N=64 K=64"
                                                << "--budget"
                                                << "4"
                                                << "--backend"
                                                << "cpu");
    QVERIFY2(same.code == 0, qPrintable(same.out + same.err));
    QCOMPARE(trialRows(dir + "/trials.csv"), trials);
    const auto entries = QJsonDocument::fromJson(readAll(dir + "/results.json")).object()["results"].toArray();
    QCOMPARE(entries.size(), 2);
  }

  void resumeOfARunThatNeverStartedSaysSo() {
    const QString dir = runs + "/unstarted";
    QVERIFY(QDir().mkpath(dir));
    writeAll(dir + "/trials.csv", "id,problem,status\n");
    const Result r = run({"tune", "--resume", "--run-name", "unstarted", "--output-dir", runs});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("start it again without --resume"), qPrintable(r.err));
  }

  void repeatedShapesAreTunedOnce() {
    const Result t = run({"tune",
                          "gemm",
                          "--backend",
                          "cpu",
                          "--shape",
                          "M=16,16 N=64 K=64",
                          "--shape",
                          "M=16 N=64 K=64",
                          "--strategy",
                          "random",
                          "--budget",
                          "3",
                          "--warmup-ms",
                          "1",
                          "--max-ms-per-config",
                          "1000",
                          "--run-name",
                          "dup",
                          "--output-dir",
                          runs,
                          "--quiet"});
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const auto entries = QJsonDocument::fromJson(readAll(runs + "/dup/results.json")).object()["results"].toArray();
    QCOMPARE(entries.size(), 1);
    QCOMPARE(trialRows(runs + "/dup/trials.csv").size(), 3);
  }

  void applyRefusesAnUnfinishedRun() {
    const Result t = run(QStringList(kSmallTune) << "--run-name"
                                                 << "partial"
                                                 << "--output-dir" << runs << "--quiet");
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    // As a Ctrl-C leaves it: state cancelled (the results of what was measured are written).
    const QString metaFile = runs + "/partial/run_metadata.json";
    writeAll(metaFile, readAll(metaFile).replace("\"state\": \"finished\"", "\"state\": \"cancelled\""));
    const QString reg = tmp.filePath("partial_registry");
    const Result d = run({"diff", runs + "/partial", "--registry", reg});
    QCOMPARE(d.code, 0);
    QVERIFY2(d.out.contains("run partial: cancelled (8 of 8 configs measured): its results are partial"),
             qPrintable(d.out));
    const Result a = run({"apply", runs + "/partial", "--registry", reg, "--accept-flagged"});
    QCOMPARE(a.code, 2);
    QVERIFY2(a.err.contains("is cancelled") && a.err.contains("--allow-unfinished"), qPrintable(a.err));
    QVERIFY(!QDir(reg + "/cpu").exists());
    const Result forced =
        run({"apply", runs + "/partial", "--registry", reg, "--allow-unfinished", "--accept-flagged"});
    QVERIFY2(forced.code == 0, qPrintable(forced.out + forced.err));
    QCOMPARE(QDir(reg + "/cpu").entryList({"*.json"}, QDir::Files).size(), 1);
  }

  void resumeAfterKill() {
    // Exhaustive over the default space: enough trials that the kill lands mid-run.
    const QStringList args = {"tune",         "gemm",       "--backend",
                              "cpu",          "--shape",    "M=32,48 N=128 K=128",
                              "--warmup-ms",  "1",          "--max-ms-per-config",
                              "100",          "--run-name", "killed",
                              "--output-dir", runs,         "--quiet"};
    const QString csv = runs + "/killed/trials.csv";
    QProcess p;
    p.start(cli(), args);
    QVERIFY(p.waitForStarted());
    // Wait for some measured (non-pruned) rows, then kill without warning.
    QElapsedTimer timer;
    timer.start();
    while (trialRows(csv).filter(QRegularExpression(",(ok|slow_abort|timeout|wrong_result),")).size() < 5 &&
           timer.elapsed() < 120000)
      QTest::qWait(20);
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);
    const QStringList before = trialRows(csv);
    QVERIFY(before.size() >= 5);
    const QByteArray metaBefore = readAll(runs + "/killed/run_metadata.json");
    QVERIFY(metaBefore.contains("\"running\""));

    const Result r = run(QStringList(args) << "--resume");
    QVERIFY2(r.code == 0 || r.code == 1, qPrintable(r.err));
    const QStringList after = trialRows(csv);
    QVERIFY(after.size() > before.size());
    // Rows written before the kill are kept as they were (a torn last row may be rewritten).
    for (int i = 0; i + 1 < before.size(); ++i) QCOMPARE(after[i], before[i]);
    // No config is recorded twice for a problem: identity = problem + parameter columns.
    const QStringList header = csvSplit(QString::fromUtf8(readAll(csv)).section('\n', 0, 0));
    const int problemCol = header.indexOf("problem"), firstParam = header.indexOf("status") + 1,
              params = header.indexOf("median_ns") - firstParam;
    QVERIFY(problemCol >= 0 && params > 0);
    QSet<QString> seen;
    for (const QString& row : after) {
      const QStringList cols = csvSplit(row);
      QVERIFY(cols.size() == header.size());
      const QString identity = cols[problemCol] + "|" + cols.mid(firstParam, params).join(',');
      QVERIFY2(!seen.contains(identity), qPrintable("duplicate trial " + identity));
      seen.insert(identity);
    }
    QVERIFY(readAll(runs + "/killed/run_metadata.json").contains("\"finished\""));
    QVERIFY(QFile::exists(runs + "/killed/results.json"));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
