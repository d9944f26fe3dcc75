// Numbers from outside are checked, not believed, end to end through the ktune CLI: a worker's
// validation numbers beyond the run's tolerance, samples that are no times, an answer that is not
// JSON and a worker that closes its stdout (tests/cli/raw_worker.py's modes), a ktune_worker kernel
// whose timer reads NaN (tests/cli/bad_timer_worker.py), a trials.csv row that is no measurement,
// and a Kernel Tuner cache with negative times.
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// The run's trials by the value of the raw worker's one parameter, x.
QMap<qint64, QJsonObject> byX(const QString& cwd, const QString& run_dir) {
  QMap<qint64, QJsonObject> out;
  for (const auto& t : measuredTrials(cwd, run_dir))
    out[t.toObject()["config"].toObject()["x"].toInteger()] = t.toObject();
  return out;
}

// A tune of the raw worker's 4 configs; `cap_ms` is --max-ms-per-config.
QStringList tune(const QString& worker, const QString& name, int cap_ms = 300) {
  return {"tune",
          "--worker",
          worker,
          "--shape",
          "n=8",
          "--run-name",
          name,
          "--max-ms-per-config",
          QString::number(cap_ms),
          "--hang-margin-ms",
          "700"};
}

// x of the best config in the run's results.json.
qint64 bestX(const QString& run) {
  const auto results = QJsonDocument::fromJson(readAll(run + "/results.json")).object()["results"].toArray();
  return results.size() == 1 ? results[0].toObject()["config"].toObject()["x"].toInteger() : -1;
}

QString text(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }

}  // namespace

class TestCheckedNumbers : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(!python().isEmpty(), "configure found no python3"); }

  void validationBeyondTheToleranceIsAWrongResultAndNeverApplied() {
    QTemporaryDir dir;
    const QString registry = dir.filePath("tuned");
    const Result r = run(tune(rawWorker(), "lie") << "--update-registry"
                                                  << "--registry" << registry << "--accept-flagged"
                                                  << "--remeasure-top"
                                                  << "0",
                         dir.path(), envWith("RAW_MODE", "lie"));
    QVERIFY2(r.code == 1, qPrintable(r.out + r.err));  // a wrong result is worth attention
    const auto trials = byX(dir.path(), "tuning_runs/lie");
    QCOMPARE(trials[2]["status"].toString(), QString("wrong_result"));
    const QString error = trials[2]["error"].toString();
    QVERIFY2(error.contains("raw_worker.py") && error.contains("mismatch_fraction 0.982") && error.contains("allows 0"),
             qPrintable(error));
    QCOMPARE(bestX(dir.filePath("tuning_runs/lie")), 1);
    const QStringList files = QDir(registry + "/raw").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const auto entry = QJsonDocument::fromJson(readAll(registry + "/raw/" + files[0]))
                           .object()["entries"]
                           .toObject()["raw"]
                           .toObject()["n=8"]
                           .toObject();
    QVERIFY2(entry["config"].toObject()["x"].toInteger() == 1, qPrintable(text(entry)));
  }

  void samplesThatAreNoTimesCrash_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("message");
    QTest::newRow("zero") << "zero"
                          << "sample of 0 ns";
    QTest::newRow("negative") << "negative"
                              << "sample of -6 ns";
  }
  void samplesThatAreNoTimesCrash() {
    QFETCH(QString, mode);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const Result r = run(tune(rawWorker(), "bad"), dir.path(), envWith("RAW_MODE", mode));
    QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
    const auto trials = byX(dir.path(), "tuning_runs/bad");
    QCOMPARE(trials[2]["status"].toString(), QString("crashed"));
    const QString error = trials[2]["error"].toString();
    QVERIFY2(error.contains(message) && error.contains("raw_worker.py"), qPrintable(error));
    QCOMPARE(bestX(dir.filePath("tuning_runs/bad")), 1);
    // The run's results are whole: diff reads them.
    const Result diff = run({"diff", "tuning_runs/bad", "--registry", dir.filePath("tuned")}, dir.path());
    QVERIFY2(diff.code == 0, qPrintable(diff.out + diff.err));
  }

  // Neither waits out the time cap for an answer that cannot come. The cap (120 s) is far above
  // what the run takes on a loaded or sanitized host, and the bound half of it: slow hosts pass, a
  // run that waits for the cap fails.
  void unreadableAnswerOrClosedStdoutCrashAtOnce_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("message");
    QTest::newRow("NaN in the answer") << "nan"
                                       << "\"samples_ns\": [NaN";
    QTest::newRow("stdout closed, process running") << "close"
                                                    << "closed its stdout";
  }
  void unreadableAnswerOrClosedStdoutCrashAtOnce() {
    QFETCH(QString, mode);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QElapsedTimer clock;
    clock.start();
    const Result r = run(tune(rawWorker(), "cut", 120000), dir.path(), envWith("RAW_MODE", mode));
    const qint64 took_ms = clock.elapsed();
    QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
    QVERIFY2(took_ms < 60000, qPrintable(QString("the run took %1 ms").arg(took_ms)));
    const auto trials = byX(dir.path(), "tuning_runs/cut");
    QCOMPARE(trials[2]["status"].toString(), QString("crashed"));
    const QString error = trials[2]["error"].toString();
    QVERIFY2(error.contains(message) && error.contains("raw_worker.py"), qPrintable(error));
    // A fresh worker measured the rest.
    for (qint64 x : {1, 3, 4}) QVERIFY2(trials[x]["status"].toString() == "ok", qPrintable(text(trials[x])));
  }

  void ktuneWorkerReportsATimerThatReadsNoTime() {
    QTemporaryDir dir;
    const QString worker = python() + " " + source("tests/cli/bad_timer_worker.py");
    QElapsedTimer clock;
    clock.start();
    const Result r = run(tune(worker, "timer", 120000) << "--warmup-ms"
                                                       << "1",
                         dir.path());
    QVERIFY2(clock.elapsed() < 60000, "a NaN sample waited out the time cap");
    QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
    const auto trials = byX(dir.path(), "tuning_runs/timer");
    for (qint64 x : {2, 3}) {
      QCOMPARE(trials[x]["status"].toString(), QString("crashed"));
      QVERIFY2(trials[x]["error"].toString().contains("the timer returned " + QString(x == 2 ? "nan" : "-5.0")),
               qPrintable(text(trials[x])));
    }
    QCOMPARE(bestX(dir.filePath("tuning_runs/timer")), 1);
  }

  void okRowWithANanMedianResumesAndCannotWin() {
    QTemporaryDir dir;
    const QStringList args = tune(rawWorker(), "nanrow") << "--remeasure-top"
                                                         << "0";
    QCOMPARE(run(args, dir.path()).code, 0);
    // x=1, the best, recorded with a NaN median, as an edited or damaged file would have it.
    const QString csv = dir.filePath("tuning_runs/nanrow/trials.csv");
    QStringList lines = QString::fromUtf8(readAll(csv)).split('\n');
    const QStringList header = lines[0].split(',');
    const int median = header.indexOf("median_ns"), x = header.indexOf("x");
    int edited = 0;
    for (auto& line : lines) {
      QStringList cells = line.split(',');
      if (cells.size() != header.size() || cells[x] != "1") continue;
      cells[median] = "nan";
      line = cells.join(',');
      ++edited;
    }
    QCOMPARE(edited, 1);
    writeAll(csv, lines.join('\n').toUtf8());

    const Result r = run(QStringList(args) << "--resume", dir.path());
    QVERIFY2(r.code == 0 || r.code == 1, qPrintable(r.out + r.err));
    const auto trials = byX(dir.path(), "tuning_runs/nanrow");
    QCOMPARE(trials[1]["status"].toString(), QString("crashed"));
    QVERIFY2(trials[1]["error"].toString().contains("median_ns is nan"), qPrintable(text(trials[1])));
    QCOMPARE(bestX(dir.filePath("tuning_runs/nanrow")), 2);
    const Result diff = run({"diff", "tuning_runs/nanrow", "--registry", dir.filePath("tuned")}, dir.path());
    QVERIFY2(diff.code == 0, qPrintable(diff.out + diff.err));
  }

  void kernelTunerEntriesWithNegativeTimesAreSkippedAndCounted() {
    QTemporaryDir dir;
    QJsonObject cache = QJsonDocument::fromJson(readAll(source("tests/data/kernel_tuner_matmul_cache.json"))).object();
    QJsonObject entries = cache["cache"].toObject();
    int spoiled = 0;
    for (const QString& key : entries.keys()) {
      QJsonObject e = entries[key].toObject();
      if (!e["time"].isDouble() || spoiled == 2) continue;
      e["times"] = QJsonArray{-0.001, -0.002};
      e["time"] = -0.0015;
      entries[key] = e;
      ++spoiled;
    }
    QCOMPARE(spoiled, 2);
    cache["cache"] = entries;
    writeAll(dir.filePath("kt.json"), QJsonDocument(cache).toJson());
    const Result r = run({"import", "kernel-tuner", "kt.json", "--run-name", "kt"}, dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(
        r.out.contains("skipped 2 entries whose time is not positive and finite") && r.out.contains("time -0.001 ms"),
        qPrintable(r.out));
    const QStringList rows =
        QString::fromUtf8(readAll(dir.filePath("tuning_runs/kt/trials.csv"))).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(rows.size() - 1, entries.size() - spoiled);
    const Result diff = run({"diff", "tuning_runs/kt", "--registry", dir.filePath("tuned")}, dir.path());
    QVERIFY2(diff.code == 0, qPrintable(diff.out + diff.err));
  }
};

QTEST_GUILESS_MAIN(TestCheckedNumbers)
#include "test_checked_numbers.moc"
