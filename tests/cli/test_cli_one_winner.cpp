// One winner and one number per shape, as a user of the CLI sees them: the summary, results.json,
// the registry and `diff` name the config the re-measure crowned, with the number it was chosen
// by (the search's beside it, labelled). A winner whose re-measure is far off its search is
// warned about, flagged in every file, and applied only with --accept-flagged. The worker's
// times are scripted (tests/cli/scripted_worker.py), so the outcome does not depend on the host.
#include <QDirIterator>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

QJsonObject jsonFile(const QString& path) { return QJsonDocument::fromJson(readAll(path)).object(); }

// The one registry file a worker run writes (its backend and device name the folder and file).
QString registryFile(const QString& root) {
  QDirIterator it(root, {"*.json"}, QDir::Files, QDirIterator::Subdirectories);
  return it.hasNext() ? it.next() : QString();
}

// The summary's row of problem n=1, its cells split on runs of spaces.
QStringList summaryRow(const QString& out) {
  bool table = false;
  for (const QString& line : out.split('\n')) {
    if (line.startsWith("best configs")) table = true;
    if (table && line.startsWith("n=1 ")) return line.split(QRegularExpression("\\s{2,}"));
  }
  return {};
}

}  // namespace

class TestCliOneWinner : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;

  Result tune(const QString& name, const QString& xs, const QStringList& extra = {}) {
    return run(
        QStringList{"tune", "--worker", python() + " " + source("tests/cli/scripted_worker.py"), "--shape", "n=1",
                    "--warmup-ms", "0", "--min-samples", "5", "--max-samples", "5", "--no-slow-abort", "--run-name",
                    name, "--output-dir", tmp.filePath("runs"), "--registry", tmp.filePath("reg-" + name)}
            << extra,
        {}, envWith("SCRIPTED_XS", xs));
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary");
    QVERIFY2(!python().isEmpty(), "KTUNE_PYTHON must name a python3");
  }

  // x=1's lucky search (90 us) loses the re-measure to x=2 (100 us): x=2 and 100 us everywhere.
  void theReMeasuredWinnerIsTheWinnerEverywhere() {
    const Result r = tune("won", "1,2,3,4", {"--update-registry"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QStringList row = summaryRow(r.out);
    QVERIFY2(row.size() >= 5, qPrintable(r.out));
    QCOMPARE(row[1], QStringLiteral("x=2"));
    QCOMPARE(row[2], QStringLiteral("100.00 us"));
    QCOMPARE(row[3], QStringLiteral("re-measure"));
    QCOMPARE(row[4], QStringLiteral("100.00 us"));
    QVERIFY2(r.err.contains("x=2 wins, not the search's best"), qPrintable(r.err));
    QVERIFY(!r.out.contains("warning:"));

    const QJsonObject result = jsonFile(tmp.filePath("runs/won/results.json"))["results"].toArray()[0].toObject();
    QCOMPARE(result["config"].toObject()["x"].toInt(), 2);
    QCOMPARE(result["stats"].toObject()["latency_median_ns"].toDouble(), 100e3);
    QCOMPARE(result["chosen_by"].toString(), QStringLiteral("remeasure"));
    QCOMPARE(result["flags"].toArray().size(), 0);

    const QJsonObject entry =
        jsonFile(registryFile(tmp.filePath("reg-won")))["entries"].toObject()["scripted"].toObject()["n=1"].toObject();
    QCOMPARE(entry["config"].toObject()["x"].toInt(), 2);
    QCOMPARE(entry["stats"].toObject()["latency_median_ns"].toDouble(), 100e3);
    QCOMPARE(entry["metadata"].toObject()["chosen_by"].toString(), QStringLiteral("remeasure"));
    QCOMPARE(entry["metadata"].toObject()["search_median_ns"].toDouble(), 100e3);

    // The run against the registry it wrote: the same number, compared like with like.
    const Result d = run({"diff", tmp.filePath("runs/won"), "--registry", tmp.filePath("reg-won")});
    QVERIFY2(d.code == 0 && d.out.contains("re-measure medians") && d.out.contains("100.00 us"), qPrintable(d.out));
  }

  // Only x=1 and the slow x=4: x=1 wins the re-measure at 130 us, 44 % off its search's 90 us.
  void aWinnerFarOffItsSearchIsWarnedFlaggedAndAppliedOnlyWhenAsked() {
    const Result r = tune("far", "1,4", {"--update-registry"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QStringList row = summaryRow(r.out);
    QVERIFY2(row.size() >= 5, qPrintable(r.out));
    QCOMPARE(row[1], QStringLiteral("x=1"));
    QCOMPARE(row[2], QStringLiteral("130.00 us"));
    QCOMPARE(row[3], QStringLiteral("re-measure (flagged)"));
    QCOMPARE(row[4], QStringLiteral("90.00 us"));
    QVERIFY2(r.out.contains("warning: n=1: re-measured 130.00 us, 90.00 us in the search (+44 %)"), qPrintable(r.out));
    QVERIFY2(r.out.contains("skipped n=1: flagged remeasure_disagrees"), qPrintable(r.out));
    QVERIFY2(r.out.contains("--accept-flagged"), qPrintable(r.out));
    QVERIFY(registryFile(tmp.filePath("reg-far")).isEmpty());

    const QJsonObject result = jsonFile(tmp.filePath("runs/far/results.json"))["results"].toArray()[0].toObject();
    QCOMPARE(result["flags"].toArray(), QJsonArray{"remeasure_disagrees"});

    const Result plain = run({"apply", tmp.filePath("runs/far"), "--registry", tmp.filePath("reg-far")});
    QVERIFY2(plain.code == 0 && plain.out.contains("unchanged"), qPrintable(plain.out + plain.err));
    const Result accepted =
        run({"apply", tmp.filePath("runs/far"), "--registry", tmp.filePath("reg-far"), "--accept-flagged"});
    QVERIFY2(accepted.code == 0 && accepted.out.contains("wrote scripted n=1 -> x=1"), qPrintable(accepted.out));
    const QJsonObject entry =
        jsonFile(registryFile(tmp.filePath("reg-far")))["entries"].toObject()["scripted"].toObject()["n=1"].toObject();
    QCOMPARE(entry["stats"].toObject()["latency_median_ns"].toDouble(), 130e3);
    QCOMPARE(entry["metadata"].toObject()["flags"].toArray(), QJsonArray{"remeasure_disagrees"});
    QVERIFY(run({"apply", "--help"}).out.contains("--accept-flagged"));
    QVERIFY(run({"tune", "--help"}).out.contains("--accept-flagged"));
  }

  // The registry entry keeps the clock its number was taken at; a run measured at a clock more than
  // 3 % away is compared with a note under the diff table, and classed by its numbers as before.
  // The scripted worker reads no clock: both sides' conditions are written into the files.
  void aDiffAtAnotherClockSaysSo() {
    const Result r = tune("clock", "2,3", {"--update-registry"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QString results = tmp.filePath("runs/clock/results.json"), registry = registryFile(tmp.filePath("reg-clock"));
    const auto insert = [](const QString& file, const QByteArray& after, const QByteArray& what) {
      QByteArray text = readAll(file);
      const auto at = text.indexOf(after);
      if (at < 0) return false;
      writeAll(file, text.insert(at + after.size(), what));
      return true;
    };
    QVERIFY(insert(registry, "\"n=1\": {", "\"conditions\": {\"sm_clock_mhz\": 1980, \"power_w\": 400},"));
    QVERIFY(insert(results, "\"chosen_by\": \"remeasure\",",
                   "\"conditions\": {\"sm_clock_mhz\": 1425, \"power_w\": 690, \"clock_limited\": 1},"));
    const Result d = run({"diff", tmp.filePath("runs/clock"), "--registry", tmp.filePath("reg-clock")});
    QVERIFY2(d.code == 0 && d.out.contains("same") &&
                 d.out.contains("note: scripted n=1: old measured at 1980 MHz, new at 1425 MHz: the ratio carries "
                                "the clock"),
             qPrintable(d.out + d.err));
    // At 1450 MHz (under 2 % from the run's 1425), nothing to say.
    writeAll(registry, readAll(registry).replace("\"sm_clock_mhz\": 1980", "\"sm_clock_mhz\": 1450"));
    const Result near = run({"diff", tmp.filePath("runs/clock"), "--registry", tmp.filePath("reg-clock")});
    QVERIFY2(near.code == 0 && !near.out.contains("note:"), qPrintable(near.out + near.err));
  }
};

QTEST_GUILESS_MAIN(TestCliOneWinner)
#include "test_cli_one_winner.moc"
