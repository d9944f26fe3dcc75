// Measuring in worker processes, end to end through the ktune CLI: the numpy example worker with
// a config that raises, one that is wrong, one that segfaults and one that hangs; raw-protocol
// workers that print noise, send garbage, exit, segfault or speak another version; `--isolate`
// on the CPU backend; kill -9 of the tuner (no orphan worker, also behind a wrapper and hung) and
// an exact resume; what a failure's message says of the worker's output.
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

  // A failure's message holds what the worker wrote for that trial, not for the ones before it on
  // the same worker; the console's one line of it ends with the last stderr line, not a heading.
  void failureMessagesHoldOnlyTheirOwnTrialsOutput() {
    QTemporaryDir dir;
    const Result r = run(rawTune("chatty"), dir.path(), envWith("RAW_MODE", "chatty"));
    QCOMPARE(r.code, 1);
    const auto trials = byParam(measuredTrials(dir.path(), "tuning_runs/chatty"), "x");
    QCOMPARE(trials[1]["status"].toString(), QString("ok"));
    const QString error = trials[2]["error"].toString();
    QCOMPARE(trials[2]["status"].toString(), QString("crashed"));
    QVERIFY2(error.contains("measuring x=2") && error.contains("debug: x=2"), qPrintable(error));
    QVERIFY2(!error.contains("x=1"), qPrintable(error));  // x=1 was measured before, on the same worker
    QString console;
    for (const QString& line : (r.out + r.err).split('\n'))
      if (line.trimmed().startsWith("crashed x=2:")) console = line;
    QVERIFY2(error.section('\n', 0, 0).endsWith("exited with code 3; stderr: giving up on x=2"), qPrintable(error));
    // The console cuts a long line (a long checkout path) with "...": never a heading left hanging.
    QVERIFY2(console.endsWith("; stderr: giving up on x=2") || console.endsWith("..."), qPrintable(r.out + r.err));
  }

  // The protocol's own refusal of a request is not a broken protocol.
  void anErrorAnswerToSampleIsSaidAsSuch() {
    QTemporaryDir dir;
    const Result r = run(rawTune("sample"), dir.path(), envWith("RAW_MODE", ""));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString all = r.out + r.err;
    QVERIFY2(all.contains("re-measure of n=8 failed, the search's best stands: the worker `" + rawWorker() +
                          "` answered sample with an error: unknown message type 'sample'"),
             qPrintable(all));
    QVERIFY2(!all.contains("broke the protocol"), qPrintable(all));
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
    QList<qint64> workers;  // ktune's supervisor of the worker, and the worker
    for (int i = 0; i < 200 && (workers.size() < 2 || rows() < 1); ++i) {
      QThread::msleep(50);
      workers = childrenOf(p.processId());
      if (workers.size() == 1) workers += childrenOf(workers.front());
    }
    QCOMPARE(workers.size(), 2);
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    bool gone = false;
    for (int i = 0; i < 250 && !gone; ++i) {
      gone = !alive(workers[0]) && !alive(workers[1]);
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

  // A worker behind a wrapper, hung in a measure when the tuner is killed -9: the wrapper and the
  // worker behind it go too, whether the worker still reads its stdin (ktune_worker, hung in its
  // measuring thread) or not (a raw worker hung in its main thread).
  void killedTunerLeavesNoHungWorkerBehindAWrapper_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("raw protocol, hung in its main thread") << "raw";
    QTest::newRow("ktune_worker, hung in its measuring thread") << "kw";
  }
  void killedTunerLeavesNoHungWorkerBehindAWrapper() {
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const QString pids = dir.path() + "/pids";
    auto env = envWith("HUNG_PIDS", pids);
    env.insert("HUNG_KIND", kind);
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.setProcessEnvironment(env);
    const QString wrapped = "sh -c '" + python() + " " + source("tests/cli/hung_worker.py") + "; true'";
    p.start(cli(), {"tune", "--worker", wrapped, "--shape", "n=8", "--run-name", "hung", "--max-ms-per-config",
                    "100000", "-q"});
    QVERIFY(p.waitForStarted());
    for (int i = 0; i < 600 && !QFile::exists(pids + ".measuring"); ++i) QThread::msleep(50);
    QVERIFY2(QFile::exists(pids + ".measuring"), "the worker never began its measure");
    QList<qint64> left;  // the worker and the shell that started it
    for (const QString& id : QString::fromUtf8(readAll(pids)).split(' ', Qt::SkipEmptyParts)) left << id.toLongLong();
    QCOMPARE(left.size(), 2);
    QVERIFY(alive(left[0]) && alive(left[1]));
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    for (int i = 0; i < 200 && (alive(left[0]) || alive(left[1])); ++i) QThread::msleep(50);
    const bool worker = alive(left[0]), shell = alive(left[1]);
    for (const qint64 pid : left)
      if (alive(pid)) ::kill(static_cast<pid_t>(pid), SIGKILL);  // no orphan of a failed check either
    QVERIFY2(!worker, "the hung worker behind the wrapper outlived the killed tuner by 10 s");
    QVERIFY2(!shell, "the wrapper outlived the killed tuner by 10 s");
  }
};

QTEST_GUILESS_MAIN(TestWorkers)
#include "test_workers.moc"
