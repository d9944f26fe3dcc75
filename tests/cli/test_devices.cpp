// `ktune tune --devices` (a worker per device, configs spread over identical devices, a run per
// model) and a remote worker through any command (`--worker "ssh host ktune worker ..."`, with a
// local shell standing in for ssh), end to end through the CLI. The raw-protocol worker
// (tests/cli/raw_worker.py) plays a machine of several devices: RAW_DEVICES names them, RAW_LOG
// shows which worker measured what.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <csignal>

#include "cli_support.h"

namespace {

QStringList rawTune(const QString& name) {
  return {"tune", "--worker",         rawWorker(), "--shape", "n=8,16,32", "--run-name", name, "--max-ms-per-config",
          "300",  "--hang-margin-ms", "700",       "-q"};
}

QProcessEnvironment machine(const QString& devices, const QString& log_dir, const QString& sleep_s = "0.05") {
  auto env = envWith("RAW_DEVICES", devices);
  env.insert("RAW_LOG", log_dir);
  env.insert("RAW_MODE", "slow");
  env.insert("RAW_SLEEP", sleep_s);
  return env;
}

// "n=8 x=1" lines a worker logged for the device.
QStringList logged(const QString& log_dir, int device) {
  QStringList lines =
      QString::fromUtf8(readAll(QString("%1/device%2.log").arg(log_dir).arg(device))).split('\n', Qt::SkipEmptyParts);
  lines.sort();
  return lines;
}

QJsonObject metadata(const QString& run_dir) {
  return QJsonDocument::fromJson(readAll(run_dir + "/run_metadata.json")).object();
}

// Waits until `pid` is gone (up to ~10 s).
bool gone(qint64 pid) {
  for (int i = 0; i < 500; ++i) {
    if (!alive(pid)) return true;
    QThread::msleep(20);
  }
  return false;
}

// Every process below `pid`: ktune's supervisors, the worker commands, what those started.
QList<qint64> descendantsOf(qint64 pid) {
  QList<qint64> out = childrenOf(pid);
  for (int i = 0; i < out.size(); ++i) out += childrenOf(out[i]);
  return out;
}

// The processes of `tree` whose command line holds `text`, ktune's supervisors left out (forks of
// the tuner, they have its command line).
QList<qint64> running(const QList<qint64>& tree, const QString& text) {
  QList<qint64> out;
  for (const qint64 pid : tree) {
    const QByteArray cmdline = readAll(QString("/proc/%1/cmdline").arg(pid)).replace('\0', ' ');
    if (cmdline.contains(text.toUtf8()) && !cmdline.startsWith((cli() + " tune").toUtf8())) out << pid;
  }
  return out;
}

}  // namespace

class TestDevices : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 (apt-get install python3 python3-numpy)");
  }

  void twoWorkersShareTheConfigsOfOneRun() {
    QTemporaryDir dir;
    const QString one = dir.path() + "/one", two = dir.path() + "/two";
    QVERIFY(QDir().mkpath(one) && QDir().mkpath(two));
    const Result single = run(rawTune("single") << "--devices"
                                                << "0",
                              dir.path(), machine("Raw A,Raw A", one));
    QVERIFY2(single.code == 0, qPrintable(single.err));
    QCOMPARE(logged(one, 0).size(), 12);
    QVERIFY(logged(one, 1).isEmpty());

    const Result r = run(rawTune("pair") << "--devices"
                                         << "all",
                         dir.path(), machine("Raw A,Raw A", two));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList a = logged(two, 0), b = logged(two, 1);
    QVERIFY2(!a.isEmpty() && !b.isEmpty(),
             qPrintable(QString("device 0 measured %1, device 1 %2").arg(a.size()).arg(b.size())));
    QCOMPARE(a.size() + b.size(), 12);  // each config once, on one device or the other
    QSet<QString> both(a.begin(), a.end());
    both.unite(QSet<QString>(b.begin(), b.end()));
    QCOMPARE(both.size(), 12);
    // The trials say which device measured them.
    QMap<int, int> by_device;
    for (const auto& t : measuredTrials(dir.path(), "tuning_runs/pair"))
      by_device[t.toObject()["metrics"].toObject()["device"].toInt(-1)]++;
    QCOMPARE(by_device.value(0), a.size());
    QCOMPARE(by_device.value(1), b.size());
    // One run (identical devices share the registry's device slug) with the 1-device run's trials.
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/pair"), trialKeys(dir.path(), "tuning_runs/single"));
    QCOMPARE(metadata(dir.path() + "/tuning_runs/pair")["device"].toObject()["slug"].toString(), QString("raw-a"));
    QVERIFY(r.out.contains("tuned_data/raw/raw-a.json"));
  }

  void differentModelsGetARunEach() {
    QTemporaryDir dir;
    const Result r = run(rawTune("mix") << "--devices"
                                        << "all",
                         dir.path(), machine("Raw A,Raw B,Raw A", dir.path()));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs/mix").exists());
    for (const QString slug : {"raw-a", "raw-b"}) {
      QCOMPARE(measuredTrials(dir.path(), "tuning_runs/mix-" + slug).size(), 12);
      QCOMPARE(metadata(dir.path() + "/tuning_runs/mix-" + slug)["device"].toObject()["slug"].toString(), slug);
    }
    QCOMPARE(logged(dir.path(), 1).size(), 12);  // Raw B alone
    QCOMPARE(logged(dir.path(), 0).size() + logged(dir.path(), 2).size(), 12);
    QVERIFY(!logged(dir.path(), 0).isEmpty() && !logged(dir.path(), 2).isEmpty());
    // Resuming resumes each model's run; nothing is measured twice.
    const Result again = run(rawTune("mix") << "--devices"
                                            << "all"
                                            << "--resume",
                             dir.path(), machine("Raw A,Raw B,Raw A", dir.path()));
    QVERIFY2(again.code == 0, qPrintable(again.err));
    QCOMPARE(logged(dir.path(), 0).size() + logged(dir.path(), 1).size() + logged(dir.path(), 2).size(), 24);
  }

  void killedMultiDeviceRunLeavesNoWorkerAndResumesExactly() {
    QTemporaryDir dir;
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.setProcessEnvironment(machine("Raw A,Raw A", dir.path(), "0.4"));
    p.start(cli(), rawTune("killed") << "--devices"
                                     << "0,1");
    QVERIFY(p.waitForStarted());
    QList<qint64> tree, workers;
    for (int i = 0; i < 400 && (workers.size() < 2 || measuredTrials(dir.path(), "tuning_runs/killed").isEmpty());
         ++i) {
      QThread::msleep(50);
      tree = descendantsOf(p.processId());
      workers = running(tree, "raw_worker.py");
    }
    QCOMPARE(workers.size(), 2);
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    for (qint64 pid : tree) QVERIFY2(gone(pid), "a worker (or its supervisor) outlived the killed tuner");
    const int before = measuredTrials(dir.path(), "tuning_runs/killed").size();
    QVERIFY(before >= 1 && before < 12);

    const Result r = run(rawTune("killed") << "--devices"
                                           << "0,1"
                                           << "--resume",
                         dir.path(), machine("Raw A,Raw A", dir.path(), "0"));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList keys = trialKeys(dir.path(), "tuning_runs/killed");
    QCOMPARE(keys.size(), 12);
    QCOMPARE(QSet<QString>(keys.begin(), keys.end()).size(), 12);  // none lost, none measured twice
  }

  // python/ktune_worker takes the --device I that --devices appends (kw.device_index()).
  void pythonWorkersServeADeviceEach() {
    QTemporaryDir dir;
    const QStringList tune = {"tune",
                              "--worker",
                              python() + " " + source("examples/workers/numpy_matmul.py"),
                              "--shape",
                              "M=128 N=128 K=64",
                              "--warmup-ms",
                              "1",
                              "--max-ms-per-config",
                              "2000",
                              "--no-slow-abort",
                              "-q"};
    const Result two = run(QStringList(tune) << "--run-name"
                                             << "two"
                                             << "--devices"
                                             << "0,1",
                           dir.path());
    QVERIFY2(two.code == 0, qPrintable(two.out + two.err));
    QCOMPARE(run(QStringList(tune) << "--run-name"
                                   << "one",
                 dir.path())
                 .code,
             0);
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/two"), trialKeys(dir.path(), "tuning_runs/one"));
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/two").size(), 6);
  }

  void oneDeviceIsTheUsualRun() {
    QTemporaryDir dir;
    const QStringList tune = {
        "tune",   "gemm",     "--backend", "cpu",         "--shape", "M=16 N=64 K=64",      "--strategy",
        "random", "--budget", "4",         "--warmup-ms", "1",       "--max-ms-per-config", "500",
        "-q"};
    // (Exit 1 would be a config that failed under a loaded machine's clock: the trials are what count.)
    QVERIFY(run(QStringList(tune) << "--run-name"
                                  << "dev"
                                  << "--device"
                                  << "0",
                dir.path())
                .code <= 1);
    QVERIFY(run(QStringList(tune) << "--run-name"
                                  << "devs"
                                  << "--devices"
                                  << "all",
                dir.path())
                .code <= 1);
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/devs"), trialKeys(dir.path(), "tuning_runs/dev"));
    // In this process, as without --devices: no worker is named among the run's versions.
    QVERIFY(!readAll(dir.path() + "/tuning_runs/devs/run_metadata.json").contains("ktune worker"));
  }

  void badDevicesAreClearErrors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    const QStringList cpu = {"tune", "gemm", "--backend", "cpu", "--shape", "M=16 N=64 K=64", "--run-name", "bad"};
    QTest::newRow("twice") << (QStringList(cpu) << "--devices"
                                                << "0,0")
                           << "names device 0 twice";
    QTest::newRow("not a list") << (QStringList(cpu) << "--devices"
                                                     << "first")
                                << "give device indices separated by commas";
    QTest::newRow("missing device") << (QStringList(cpu) << "--devices"
                                                         << "0,1")
                                    << "device 1 does not exist, the cpu backend has 1 device(s)";
    QTest::newRow("with --device") << (QStringList(cpu) << "--devices"
                                                        << "0"
                                                        << "--device"
                                                        << "0")
                                   << "--device and --devices contradict";
    QTest::newRow("worker ignores --device")
        << QStringList{"tune",    "--worker",   rawWorker() + " --ignored {device}",
                       "--shape", "n=8",        "--devices",
                       "0,1",     "--run-name", "bad"}
        << "the worker started for device 1 says it measures on device 0: it ignores --device";
  }
  void badDevicesAreClearErrors() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const Result r = run(args, dir.path(), envWith("RAW_DEVICES", "Raw A,Raw A"));
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs/bad").exists());
  }

  // `--worker "ssh gpu1 ktune worker --backend cuda"`, with a shell in ssh's place: the worker is a
  // grandchild of the tuner, as the remote one is behind ssh.
  void remoteWorkerThroughAnyCommand() {
    QTemporaryDir dir;
    const QString remote = "sh -c '" + cli() + " worker --backend cpu; true'";
    const QStringList tune = {
        "tune",   "gemm",     "--worker", remote,        "--shape", "M=16 N=64 K=64",      "--strategy",
        "random", "--budget", "3",        "--warmup-ms", "1",       "--max-ms-per-config", "2000",
        "-q"};
    const Result r = run(QStringList(tune) << "--run-name"
                                           << "remote",
                         dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(measuredTrials(dir.path(), "tuning_runs/remote").size(), 3);
    QVERIFY(readAll(dir.path() + "/tuning_runs/remote/run_metadata.json").contains("ktune worker"));

    // Killing the tuner ends the command and the worker behind it (their group is killed by
    // ktune's supervisor of them), mid-run.
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.start(cli(),
            {"tune", "gemm", "--worker", remote, "--shape", "M=64 N=256 K=256", "--warmup-ms", "5",
             "--max-ms-per-config", "100", "--min-samples", "5", "--max-samples", "20", "-q", "--run-name", "killed"});
    QVERIFY(p.waitForStarted());
    QList<qint64> tree, shells, workers;
    // Until one snapshot of the tree holds the command and its worker, once a trial is in: ktune
    // starts a worker command as /bin/sh -c "exec <command>", and until that exec the process holds
    // "ktune worker" in its command line but not the "sh -c <ktune>" the test names.
    for (int i = 0; i < 600 && (shells.size() != 1 || workers.size() != 1 ||
                                measuredTrials(dir.path(), "tuning_runs/killed").isEmpty());
         ++i) {
      QThread::msleep(50);
      tree = descendantsOf(p.processId());
      shells = running(tree, "sh -c " + cli());
      workers = running(tree, cli() + " worker --backend cpu");
      for (const qint64 s : shells) workers.removeAll(s);
    }
    QCOMPARE(shells.size(), 1);
    QCOMPARE(workers.size(), 1);
    QVERIFY2(p.state() == QProcess::Running, "the run ended before it could be killed; give it more to measure");
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished();
    QVERIFY2(gone(shells.front()), "the worker command outlived the killed tuner");
    QVERIFY2(gone(workers.front()), "the worker behind the command outlived the killed tuner");
    for (const qint64 pid : tree) QVERIFY2(gone(pid), "a process of the worker's outlived the killed tuner");
    const Result resumed = run({"tune", "--worker", remote, "--run-name", "killed", "--resume", "-q"}, dir.path());
    QVERIFY2(resumed.code == 0, qPrintable(resumed.out + resumed.err));
    const QStringList keys = trialKeys(dir.path(), "tuning_runs/killed");
    QVERIFY2(resumed.out.contains(QString("finished (%1 of %1 configs measured)").arg(keys.size())),
             qPrintable(resumed.out));
    QCOMPARE(QSet<QString>(keys.begin(), keys.end()).size(), keys.size());  // none lost, none measured twice
  }
};

QTEST_GUILESS_MAIN(TestDevices)
#include "test_devices.moc"
