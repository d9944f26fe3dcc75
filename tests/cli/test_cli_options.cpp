// Every value `ktune tune` accepts, ktune writes and reads back: each number option refuses NaN,
// infinities and values out of its range at parse time (exit 2, naming the option), a hand-edited
// run_metadata.json with such a value is refused naming the file and the key, and runs with every
// option at an edge of its range are read by every command that reads runs.
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"
#include "ktune/worker_protocol.h"

namespace {

const QString kShape = "M=16 N=64 K=64";

// Two configs of the CPU gemm (both loop orders) on the portable micro-kernel (vec=4), which
// every x86 runs: a run at any setting stays quick, on any host.
const QByteArray kTwoConfigs =
    R"({"parameters": {"MR": [4], "NR": [8], "vec": [4], "MC": [48], "KC": [64], "NC": [64],
        "loop_order": [0, 1], "threads": [1]}})";

// Every run option at the smallest value it accepts (the strategy and method have no order).
const QStringList kSmallest = {"--strategy",
                               "exhaustive",
                               "--budget",
                               "0",
                               "--seed",
                               "0",
                               "--workload-seed",
                               "0",
                               "--time-budget",
                               "0",
                               "--method",
                               "per_launch",
                               "--noise-target",
                               "1e-6",
                               "--min-samples",
                               "1",
                               "--max-samples",
                               "1",
                               "--warmup-ms",
                               "0",
                               "--min-sample-ms",
                               "0",
                               "--max-ms-per-config",
                               "1",
                               "--slow-abort-margin",
                               "0",
                               "--remeasure-top",
                               "0",
                               "--atol",
                               "0",
                               "--rtol",
                               "0",
                               "--max-mismatch",
                               "0",
                               "--rotate-buffers",
                               "--compile-threads",
                               "0"};
// Every run option at the largest value it accepts, but for the two that would make the run
// slow at their largest (--min-samples, --min-sample-ms) and --warmup-ms, which the smallest
// run already covers.
const QStringList kLargest = {"--strategy",
                              "random",
                              "--budget",
                              "10000000",
                              "--seed",
                              "18446744073709551615",
                              "--workload-seed",
                              "18446744073709551615",
                              "--time-budget",
                              "720h",
                              "--noise-target",
                              "1",
                              "--min-samples",
                              "1",
                              "--max-samples",
                              "1000000",
                              "--warmup-ms",
                              "0",
                              "--min-sample-ms",
                              "0",
                              "--max-ms-per-config",
                              "3600000",
                              "--no-slow-abort",
                              "--slow-abort-margin",
                              "1000",
                              "--remeasure-top",
                              "1000",
                              "--atol",
                              "1.7976931348623157e308",
                              "--rtol",
                              "1.7976931348623157e308",
                              "--max-mismatch",
                              "1"};

// A command that read what it was given: it did its work (0) or found results worth attention
// (1: a shape whose configs all failed), and said nothing of unreadable input.
bool readIt(const Result& r) {
  return (r.code == 0 || r.code == 1) && !r.err.contains("ktune: error") && !r.err.contains("ktune: failed");
}

}  // namespace

class TestCliOptions : public QObject {
  Q_OBJECT

  QTemporaryDir tmp;
  QString space, runs, registry;

  QStringList tune(const QString& name, const QStringList& options) const {
    return QStringList{"tune", "gemm",         "--backend", "cpu",        "--shape", kShape, "--space",
                       space,  "--output-dir", runs,        "--run-name", name,      "-q"}
           << options;
  }

  // Every command that reads a run folder, on `name` under `runs`: none may refuse it.
  void readWithEveryCommand(const QString& name, const QStringList& options) {
    const QString dir = runs + "/" + name;
    const QList<QStringList> commands = {
        {"diff", dir, "--registry", registry},
        {"apply", dir, "--registry", registry, "--dry-run"},
        {"export", dir, "--format", "csv"},
        {"export", dir, "--format", "json"},
        QStringList{"tune", "--resume", "--run-name", name, "--output-dir", runs, "-q"} << options,
        QStringList{"tune", "--replay", dir, "--output-dir", runs, "--run-name", "replay_" + name, "-q"}
            << options.mid(0, 6),
        {"diff", runs + "/replay_" + name, "--registry", registry},
    };
    for (const QStringList& args : commands) {
      const Result r = run(args, tmp.path());
      QVERIFY2(readIt(r), qPrintable(args.join(' ') + " -> " + QString::number(r.code) + "\n" + r.out + r.err));
    }
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary");
    space = tmp.filePath("two_configs.json");
    writeAll(space, kTwoConfigs);
    runs = tmp.filePath("runs");
    registry = tmp.filePath("registry");
  }

  void badNumberIsRefusedAtParseTime_data() {
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("needle");
    struct OutOfRange {
      const char* flag;
      std::vector<const char*> values;
    };
    const OutOfRange outOfRange[] = {
        {"--noise-target", {"0", "1e-7", "1.5", "-0.01"}},
        {"--warmup-ms", {"-1", "3600001"}},
        {"--min-sample-ms", {"-0.5", "3600001"}},
        {"--max-ms-per-config", {"0", "0.5", "-5", "3600001"}},
        {"--slow-abort-margin", {"-0.1", "1001"}},
        {"--atol", {"-1e-9"}},
        {"--rtol", {"-1"}},
        {"--max-mismatch", {"-0.1", "1.01"}},
        {"--min-samples", {"0", "-1", "1000001"}},
        {"--max-samples", {"0", "1000001"}},
        {"--remeasure-top", {"-1", "1001"}},
        {"--budget", {"10000001", "-1"}},
        {"--workload-seed", {"-1"}},
        {"--compile-threads", {"-1", "4097"}},
    };
    for (const OutOfRange& o : outOfRange)
      for (const char* v : o.values)
        QTest::addRow("%s %s", o.flag, v) << QStringList{o.flag, v} << QString(o.flag) + ": ";
    for (const char* flag : {"--noise-target", "--warmup-ms", "--min-sample-ms", "--max-ms-per-config",
                             "--slow-abort-margin", "--atol", "--rtol", "--max-mismatch"})
      for (const char* v : {"NaN", "nan", "inf", "-inf", "1e400"})
        QTest::addRow("%s %s", flag, v) << QStringList{flag, v} << QString(flag) + ": ";
    // Integer options: CLI11 itself refuses what is not an integer.
    for (const char* flag :
         {"--min-samples", "--max-samples", "--remeasure-top", "--budget", "--seed", "--workload-seed"})
      QTest::addRow("%s NaN", flag) << QStringList{flag, "NaN"} << QString(flag);
    for (const char* v : {"NaN", "inf", "721h", "-5m"})
      QTest::addRow("--time-budget %s", v) << QStringList{"--time-budget", v} << QString("--time-budget");
    QTest::newRow("no samples") << QStringList{"--min-samples", "0", "--max-samples", "0"} << "--min-samples: 0";
    QTest::newRow("max below min") << QStringList{"--min-samples", "10", "--max-samples", "5"}
                                   << "--max-samples: 5 is less than --min-samples (10)";
    QTest::newRow("hang margin NaN") << QStringList{"--isolate", "--hang-margin-ms", "NaN"} << "--hang-margin-ms: NaN";
    QTest::newRow("hang margin negative")
        << QStringList{"--isolate", "--hang-margin-ms", "-1"} << "--hang-margin-ms: -1";
    QTest::newRow("unknown strategy") << QStringList{"--strategy", "simulated"} << "--strategy: 'simulated'";
    QTest::newRow("unknown method") << QStringList{"--method", "xprof"} << "--method";
  }
  void badNumberIsRefusedAtParseTime() {
    QFETCH(QStringList, options);
    QFETCH(QString, needle);
    for (const QString& mode : {QStringLiteral("--dry-run"), QStringLiteral("--no-save")}) {
      const Result r = run(
          QStringList{"tune", "gemm", "--backend", "cpu", "--shape", kShape, "--space", space, mode, "-q"} << options);
      QVERIFY2(r.code == 2,
               qPrintable(options.join(' ') + " " + mode + " -> " + QString::number(r.code) + "\n" + r.out + r.err));
      QVERIFY2(r.err.contains(needle), qPrintable(r.err));
    }
  }

  void rangeIsNamedInTheMessage() {
    const Result r = run({"tune", "gemm", "--backend", "cpu", "--shape", kShape, "--dry-run", "--atol", "NaN"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--atol: NaN is not a finite number; give a number >= 0"), qPrintable(r.err));
    const Result n = run({"tune", "gemm", "--backend", "cpu", "--shape", kShape, "--dry-run", "--noise-target", "2"});
    QVERIFY2(n.err.contains("--noise-target: 2 is out of range; give a number in [1e-06, 1]"), qPrintable(n.err));
  }

  void smallestValuesWriteARunEveryCommandReads() {
    const Result r = run(tune("smallest", kSmallest), tmp.path());
    QVERIFY2(readIt(r), qPrintable(r.out + r.err));
    readWithEveryCommand("smallest", kSmallest);
  }

  void largestValuesWriteARunEveryCommandReads() {
    const Result r = run(tune("largest", kLargest), tmp.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    readWithEveryCommand("largest", kLargest);
    // The shards of such a run merge, and the merged run reads like any other.
    for (const QString shard : {"0/2", "1/2"}) {
      const Result s = run(tune("shard" + shard.left(1), kLargest) << "--shard" << shard, tmp.path());
      QVERIFY2(readIt(s), qPrintable(s.out + s.err));
    }
    const Result m = run({"merge", runs + "/shard0", runs + "/shard1", "--output-dir", runs, "--run-name", "merged"});
    QVERIFY2(m.code == 0, qPrintable(m.out + m.err));
    const Result d = run({"diff", runs + "/merged", "--registry", registry});
    QVERIFY2(d.code == 0, qPrintable(d.out + d.err));
  }

  // `ktune worker` measures with the settings it is sent: bad ones are answered with an error
  // naming them, and the worker serves on.
  void workerAnswersBadSettingsWithAnError() {
    ktune::worker::Request r;
    r.type = "measure";
    r.id = 7;
    r.family = "gemm";
    r.problem = ktune::Problem::from_key("gemm", "M=16,N=64,K=64,dtype=f32");
    nlohmann::json bad = ktune::worker::to_json(r);
    bad["settings"]["min_samples"] = 0;
    QProcess w;
    w.start(cli(), {"worker", "--backend", "cpu"});
    QVERIFY(w.waitForStarted());
    const std::string input = ktune::worker::to_line(ktune::worker::client_hello()) + ktune::worker::to_line(bad) +
                              ktune::worker::to_line({{"type", "shutdown"}, {"id", 8}});
    w.write(input.data(), static_cast<qint64>(input.size()));
    w.closeWriteChannel();
    QVERIFY(w.waitForFinished(60000));
    const QString out = QString::fromUtf8(w.readAllStandardOutput());
    QVERIFY2(out.contains(R"("id":7)") && out.contains(R"("type":"error")") &&
                 out.contains("measure.min_samples: 0 is out of range"),
             qPrintable(out));
    QVERIFY2(out.contains(R"("type":"bye")"), qPrintable(out));
  }

  // A value out of range in a hand-edited run_metadata.json (or the null an older ktune wrote for
  // NaN) is refused by every command that reads the run, naming the file and the key.
  void handEditedMetadataIsRefusedNamingFileAndKey_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::newRow("noise_target 0") << "noise_target"
                                    << "0";
    QTest::newRow("noise_target null") << "noise_target"
                                       << "null";
    QTest::newRow("max_ms_per_config 1e400") << "max_ms_per_config"
                                             << "1e400";
    QTest::newRow("max_ms_per_config -1") << "max_ms_per_config"
                                          << "-1";
    QTest::newRow("min_samples 0") << "min_samples"
                                   << "0";
    QTest::newRow("min_samples wraps") << "min_samples"
                                       << "4294967297";
    QTest::newRow("max_samples below min") << "max_samples"
                                           << "0";
    QTest::newRow("atol -1") << "atol"
                             << "-1";
    QTest::newRow("max_mismatch_fraction 2") << "max_mismatch_fraction"
                                             << "2";
    QTest::newRow("remeasure_top -3") << "remeasure_top"
                                      << "-3";
    QTest::newRow("time_budget_s 1e9") << "time_budget_s"
                                       << "1e9";
    QTest::newRow("budget 1e12") << "budget"
                                 << "1000000000000";
  }
  void handEditedMetadataIsRefusedNamingFileAndKey() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    const QString name = "edited_" + QString(QTest::currentDataTag()).replace(' ', '_');
    const Result made = run(tune(name, {"--min-samples", "2", "--max-samples", "3", "--warmup-ms", "0"}), tmp.path());
    QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
    const QString file = runs + "/" + name + "/run_metadata.json";
    QString text = QString::fromUtf8(readAll(file));
    const QRegularExpression field("(\"" + key + "\":\\s*)[^,\\n}]+");
    QVERIFY(text.contains(field));
    text.replace(field, "\\1" + value);
    writeAll(file, text.toUtf8());
    const QList<QStringList> readers = {
        {"diff", runs + "/" + name, "--registry", registry},
        {"apply", runs + "/" + name, "--registry", registry, "--dry-run"},
        {"export", runs + "/" + name, "--format", "json"},
        {"tune", "--resume", "--run-name", name, "--output-dir", runs, "-q"},
        {"tune", "--replay", runs + "/" + name, "--no-save", "-q"},
    };
    for (const QStringList& args : readers) {
      const Result r = run(args, tmp.path());
      QVERIFY2(r.code == 2, qPrintable(args.join(' ') + " -> " + QString::number(r.code) + "\n" + r.out + r.err));
      QVERIFY2(r.err.contains("run_metadata.json") && r.err.contains(key), qPrintable(r.err));
    }
  }
};

QTEST_GUILESS_MAIN(TestCliOptions)
#include "test_cli_options.moc"
