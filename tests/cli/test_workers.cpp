// Measuring in worker processes, end to end through the ktune CLI: the numpy example worker with
// a config that raises, one that is wrong, one that segfaults and one that hangs; raw-protocol
// workers that print noise, send garbage, exit, segfault or speak another version; `--isolate`
// on the CPU backend; kill -9 of the tuner (no orphan worker) and an exact resume.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <csignal>

#include "cli_support.h"

namespace {

// status by the value of one config parameter
QMap<qint64, QJsonObject> byParam(const QJsonArray& trials, const QString& param) {
  QMap<qint64, QJsonObject> out;
  for (const auto& t : trials) out[t.toObject()["config"].toObject()[param].toInteger()] = t.toObject();
  return out;
}

QStringList rawTune(const QString& name) {
  return {"tune", "--worker",         rawWorker(), "--shape", "n=8", "--run-name", name, "--max-ms-per-config",
          "300",  "--hang-margin-ms", "700"};
}

}  // namespace

class TestWorkers : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 with numpy (apt-get install python3 python3-numpy)");
  }

  void numpyWorkerRecordsEveryFailureAndGoesOn() {
    QTemporaryDir dir;
    const Result r = run({"tune", "--worker", python() + " " + source("examples/workers/numpy_matmul.py"), "--shape",
                          "M=128 N=128 K=64", "--run-name", "np", "--warmup-ms", "1", "--max-ms-per-config", "2000",
                          "--hang-margin-ms", "1000", "--no-slow-abort"},
                         dir.path(), envWith("KTUNE_DEMO_FAULTS", "1"));
    QCOMPARE(r.code, 1);  // attention: wrong and crashed configs
    const QJsonArray trials = measuredTrials(dir.path(), "tuning_runs/np");
    QMap<QString, int> count;
    for (const auto& t : trials) {
      const auto o = t.toObject();
      const auto c = o["config"].toObject();
      // string parameters are strings everywhere: on the wire, in trials.csv and in the export
      const QMap<QString, QString> outcome{{"none", "ok"},
                                           {"raise", "compile_error"},
                                           {"wrong", "wrong_result"},
                                           {"segfault", "crashed"},
                                           {"hang", "timeout"}};
      QVERIFY2(outcome.contains(c["inject"].toString()), qPrintable(c["inject"].toString()));
      const QString expected = outcome[c["inject"].toString()];
      const QString status = o["status"].toString();
      // --no-slow-abort: which ok configs a slow-abort cuts short depends on the measuring order and
      // the machine's load, so every healthy config is measured fully here.
      QVERIFY2(status == expected, qPrintable(QJsonDocument(o).toJson(QJsonDocument::Compact)));
      if (status == "crashed") QVERIFY2(o["error"].toString().contains("SIGSEGV"), qPrintable(o["error"].toString()));
      if (status == "compile_error") QVERIFY(o["error"].toString().contains("injected"));
      count[status]++;
    }
    QCOMPARE(count["compile_error"], 2);
    QCOMPARE(count["wrong_result"], 2);
    QCOMPARE(count["crashed"], 2);
    QCOMPARE(count["timeout"], 2);
    QCOMPARE(count["ok"], 6);  // blocks 32, 64, 128 in both orders (256 > M and N is pruned)
    // The best three were re-measured in alternation through the worker's `sample`.
    const auto results = QJsonDocument::fromJson(readAll(dir.path() + "/tuning_runs/np/results.json")).object();
    const auto remeasured = results["results"].toArray().at(0).toObject()["remeasured"];
    QVERIFY2(remeasured.toArray().size() == 3, qPrintable(QJsonDocument(results).toJson(QJsonDocument::Compact)));
    QVERIFY(r.out.contains("block="));
  }

  void rawWorkerMisbehaviours_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("status");  // of x=2
    QTest::addColumn<QString>("message");
    QTest::newRow("prints outside the protocol") << "noise"
                                                 << "ok"
                                                 << "";
    QTest::newRow("sends garbage") << "garbage"
                                   << "crashed"
                                   << "broke the protocol";
    QTest::newRow("exits early") << "exit"
                                 << "crashed"
                                 << "exited with code 3";
    QTest::newRow("segfaults") << "segv"
                               << "crashed"
                               << "SIGSEGV";
  }
  void rawWorkerMisbehaviours() {
    QFETCH(QString, mode);
    QFETCH(QString, status);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const Result r = run(rawTune("raw"), dir.path(), envWith("RAW_MODE", mode));
    QCOMPARE(r.code, status == "ok" ? 0 : 1);
    const auto trials = byParam(measuredTrials(dir.path(), "tuning_runs/raw"), "x");
    QCOMPARE(trials.size(), 4);
    for (qint64 x : {1, 3, 4}) QCOMPARE(trials[x]["status"].toString(), QString("ok"));
    QCOMPARE(trials[2]["status"].toString(), status);
    QVERIFY2(trials[2]["error"].toString().contains(message), qPrintable(trials[2]["error"].toString()));
  }

  void workerOfAnotherProtocolVersionIsAClearError() {
    QTemporaryDir dir;
    const Result r = run(rawTune("old"), dir.path(), envWith("RAW_MODE", "old"));
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("speaks protocol 99, this ktune speaks 1"), qPrintable(r.err));
  }

  void ktuneWorkerRefusesAnotherProtocolVersion() {
    QProcess p;
    p.start(cli(), {"worker", "--backend", "cpu"});
    QVERIFY(p.waitForStarted());
    p.write("{\"type\":\"hello\",\"protocol\":7}\n");
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    const auto reply = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(reply["type"].toString(), QString("error"));
    QVERIFY2(reply["message"].toString().contains("protocol 7"), qPrintable(reply["message"].toString()));
  }

  void isolatedCpuTuneMeasuresInAWorker() {
    QTemporaryDir dir;
    const Result r =
        run({"tune", "gemm", "--backend", "cpu", "--isolate", "--shape", "M=16 N=64 K=64", "--strategy", "random",
             "--budget", "3", "--seed", "1", "--warmup-ms", "1", "--max-ms-per-config", "1000", "--run-name", "iso"},
            dir.path());
    QCOMPARE(r.code, 0);
    const QJsonArray trials = measuredTrials(dir.path(), "tuning_runs/iso");
    QCOMPARE(trials.size(), 3);
    for (const auto& t : trials) QVERIFY(t.toObject()["stats"].toObject()["latency_median_ns"].toDouble() > 0);
    QFile md(dir.path() + "/tuning_runs/iso/run_metadata.json");
    QVERIFY(md.open(QIODevice::ReadOnly));
    QVERIFY(md.readAll().contains("ktune worker"));  // the worker is named in the run's versions
  }

  void killedTunerLeavesNoWorkerAndResumesExactly() {
    QTemporaryDir dir;
    auto env = envWith("RAW_MODE", "slow");
    env.insert("RAW_SLEEP", "0.4");
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.setProcessEnvironment(env);
    p.start(cli(), rawTune("killed"));
    QVERIFY(p.waitForStarted());
    // Wait until a trial is recorded, so the worker is mid-run.
    const QString csv = dir.path() + "/tuning_runs/killed/trials.csv";
    auto rows = [&] {
      QFile f(csv);
      return f.open(QIODevice::ReadOnly) ? f.readAll().count('\n') - 1 : 0;
    };
    QList<qint64> workers;
    for (int i = 0; i < 200 && (workers.isEmpty() || rows() < 1); ++i) {
      QThread::msleep(50);
      workers = childrenOf(p.processId());
    }
    QCOMPARE(workers.size(), 1);
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = !alive(workers.front());
      if (!gone) QThread::msleep(20);
    }
    QVERIFY2(gone, "the worker outlived the killed tuner");

    const int before = measuredTrials(dir.path(), "tuning_runs/killed").size();
    QVERIFY(before >= 1 && before < 4);
    env.insert("RAW_SLEEP", "0");
    const Result r = run(rawTune("killed") << "--resume", dir.path(), env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonArray trials = measuredTrials(dir.path(), "tuning_runs/killed");
    QCOMPARE(trials.size(), 4);
    QSet<qint64> xs;
    for (const auto& t : trials) xs << t.toObject()["config"].toObject()["x"].toInteger();
    QCOMPARE(xs, (QSet<qint64>{1, 2, 3, 4}));  // each config once: none lost, none measured twice
  }
};

QTEST_GUILESS_MAIN(TestWorkers)
#include "test_workers.moc"
