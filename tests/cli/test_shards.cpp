// `ktune tune --shard I/N` and `ktune merge`, end to end through the CLI: three shards of a CPU
// run merge into the unsharded run's set of trials, and diff and apply work on the merged run; a
// killed shard resumes to exactly its slice; bad shards and bad merges (a finished shard with a
// torn row among them) are clear errors (exit 2) that write nothing.
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

// A space that every x86 host keeps whole (portable vectors, one thread, blocks inside any
// cache, no device constraint), so that the shards split the same 72 configs a problem on every
// machine; the default space keeps from 4 to over 100, depending on the host.
QString portableSpace() {
  static QTemporaryDir dir;
  const QString path = dir.filePath("space.json");
  if (!QFile::exists(path))
    writeAll(path, R"({"parameters": {"MR": [4, 6], "NR": [8], "vec": [4], "MC": [16, 32], "KC": [16, 32, 64],
                       "NC": [16, 32, 64], "loop_order": [0, 1], "threads": [1]}, "constraints": []})");
  return path;
}

// A small CPU gemm run: 2 problems of 72 configs each, a second or two.
QStringList cpuTune(const QString& name) {
  return QStringList{"tune", "gemm", "--backend", "cpu", "--shape", "M=16,32 N=64 K=64"} + quickMeasure()
         << "-q"
         << "--space" << portableSpace() << "--run-name" << name;
}

QJsonObject metadata(const QString& run_dir) {
  return QJsonDocument::fromJson(readAll(run_dir + "/run_metadata.json")).object();
}

QStringList rawTune(const QString& name) {
  return {"tune", "--worker",         rawWorker(), "--shape", "n=8,16,32", "--run-name", name, "--max-ms-per-config",
          "300",  "--hang-margin-ms", "700",       "-q"};
}

// Starts a slow raw-worker shard run and kills the tuner (kill -9) once it has recorded a trial.
void killAfterFirstTrial(const QString& cwd, const QString& name, const QString& shard) {
  auto env = envWith("RAW_MODE", "slow");
  env.insert("RAW_SLEEP", "0.3");
  QProcess p;
  p.setWorkingDirectory(cwd);
  p.setProcessEnvironment(env);
  p.start(cli(), rawTune(name) << "--shard" << shard);
  QVERIFY(p.waitForStarted());
  for (int i = 0; i < 400 && measuredTrials(cwd, "tuning_runs/" + name).isEmpty(); ++i) QThread::msleep(50);
  ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
  p.waitForFinished();
}

}  // namespace

class TestShards : public QObject {
  Q_OBJECT
 private slots:
  void threeShardsMergeIntoTheUnshardedRun() {
    QTemporaryDir dir;
    QCOMPARE(run(cpuTune("full"), dir.path()).code, 0);
    QSet<QString> seen;
    int total = 0;
    for (int i = 0; i < 3; ++i) {
      const Result r = run(cpuTune(QString("s%1").arg(i)) << "--shard" << QString("%1/3").arg(i), dir.path());
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const QStringList keys = trialKeys(dir.path(), QString("tuning_runs/s%1").arg(i));
      QVERIFY2(keys.size() > 10, "each shard measures a share");  // 144 configs over 3 shards by a hash
      for (const auto& k : keys) QVERIFY2(!seen.contains(k), qPrintable("in two shards: " + k));
      seen.unite(QSet<QString>(keys.begin(), keys.end()));
      total += keys.size();
    }
    QCOMPARE(total, 144);

    const Result m =
        run({"merge", "tuning_runs/s2", "tuning_runs/s0", "tuning_runs/s1", "--run-name", "merged"}, dir.path());
    QVERIFY2(m.code == 0, qPrintable(m.err));
    QVERIFY2(m.out.contains("merged 3 shard(s): 144 trials"), qPrintable(m.out));
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/merged"), trialKeys(dir.path(), "tuning_runs/full"));

    const QJsonObject md = metadata(dir.path() + "/tuning_runs/merged");
    QCOMPARE(md["state"].toString(), QString("finished"));
    QVERIFY(!md.contains("shard"));  // the merged run is the unsharded run
    const QJsonArray from = md["merged_from"].toArray();
    QCOMPARE(from.size(), 3);
    // The merge's shard paths are relative to where it ran; each shard keeps where it was made.
    const QString here = QFileInfo(dir.path()).canonicalFilePath();
    QCOMPARE(md["working_directory"].toString(), here);
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(from[i].toObject()["working_directory"].toString(), here);
      QCOMPARE(from[i].toObject()["run"].toString(), QString("s%1").arg(i));
      QCOMPARE(from[i].toObject()["shard"].toObject()["index"].toInt(), i);
    }
    // The result of each problem is the winner of the shard whose winner is fastest, with the
    // number it was chosen by (each shard re-measured its own best few) and how it was chosen.
    auto resultsOf = [&](const QString& run) {
      return QJsonDocument::fromJson(readAll(dir.path() + "/tuning_runs/" + run + "/results.json"))
          .object()["results"]
          .toArray();
    };
    const QJsonArray results = resultsOf("merged");
    QCOMPARE(results.size(), 2);
    for (const auto& res : results) {
      QJsonObject fastest;
      for (const char* shard : {"s0", "s1", "s2"})
        for (const auto& e : resultsOf(shard))
          if (e.toObject()["key"] == res.toObject()["key"] &&
              (fastest.isEmpty() || e.toObject()["stats"].toObject()["latency_median_ns"].toDouble() <
                                        fastest["stats"].toObject()["latency_median_ns"].toDouble()))
            fastest = e.toObject();
      QCOMPARE(res.toObject()["config"], fastest["config"]);
      QCOMPARE(res.toObject()["stats"], fastest["stats"]);
      QCOMPARE(res.toObject()["chosen_by"], fastest["chosen_by"]);
      QCOMPARE(res.toObject()["search"], fastest["search"]);
    }

    const Result diff = run({"diff", "tuning_runs/merged", "--registry", "reg"}, dir.path());
    QVERIFY2(diff.code == 0 && diff.out.contains("finished (144 of 144 configs measured)"),
             qPrintable(diff.out + diff.err));
    QCOMPARE(diff.out.count("\nnew "), 2);
    const Result apply = run({"apply", "tuning_runs/merged", "--registry", "reg", "--accept-flagged"}, dir.path());
    QVERIFY2(apply.code == 0 && apply.out.contains("updated"), qPrintable(apply.out + apply.err));
    QVERIFY(QDir(dir.path() + "/reg/cpu").entryList({"*.json"}).size() == 1);
  }

  // examples/slurm/tune_array.sh as the array's tasks and the dependent merge job run it.
  void slurmArrayScriptTunesShardsAndMerges() {
    QTemporaryDir dir;
    writeAll(dir.path() + "/shapes.txt", "# a model's shapes\nM=16,32 N=64 K=64\n\n");
    QCOMPARE(run(cpuTune("full"), dir.path()).code, 0);
    auto env = QProcessEnvironment::systemEnvironment();
    const QString tuneArgs =
        "--space " + portableSpace() + " --warmup-ms 1 --max-ms-per-config 300 --min-samples 3 --max-samples 5 -q";
    for (const auto& [k, v] : {std::pair<QString, QString>{"KTUNE", cli()},
                               {"SHAPES", "shapes.txt"},
                               {"FAMILY", "gemm"},
                               {"BACKEND", "cpu"},
                               {"RUN", "model"},
                               {"OUT", "runs"},
                               {"SLURM_ARRAY_TASK_COUNT", "3"},
                               {"TUNE_ARGS", tuneArgs}})
      env.insert(k, v);
    auto script = [&](const QString& task, const QStringList& args = {}) {
      QProcess p;
      p.setWorkingDirectory(dir.path());
      auto e = env;
      if (!task.isEmpty()) e.insert("SLURM_ARRAY_TASK_ID", task);
      p.setProcessEnvironment(e);
      p.start("bash", QStringList{source("examples/slurm/tune_array.sh")} << args);
      p.waitForFinished(300000);
      return p.exitCode() + (p.exitStatus() == QProcess::NormalExit ? 0 : 100);
    };
    for (const QString task : {"0", "1", "2", "1"})
      QCOMPARE(script(task), 0);  // the second 1 is a requeued task: it resumes
    env.insert("N", "3");
    QCOMPARE(script("", {"merge"}), 0);
    QCOMPARE(trialKeys(dir.path(), "runs/model"), trialKeys(dir.path(), "tuning_runs/full"));

    // On the login node it submits the array, then the merge after it (a stand-in sbatch records both).
    QVERIFY(QDir(dir.path()).mkpath("bin"));
    writeAll(dir.path() + "/bin/sbatch", "#!/bin/sh\necho \"$*\" >> \"$SBATCH_LOG\"\necho 4242\n");
    QVERIFY(QFile::setPermissions(dir.path() + "/bin/sbatch", QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    env.insert("PATH", dir.path() + "/bin:" + env.value("PATH"));
    env.insert("SBATCH_LOG", dir.path() + "/sbatch.log");
    env.remove("SLURM_ARRAY_TASK_COUNT");
    QCOMPARE(script(""), 0);
    const QStringList calls = QString::fromUtf8(readAll(dir.path() + "/sbatch.log")).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(calls.size(), 2);
    QVERIFY2(calls[0].startsWith("--parsable --array=0-2 --gres=gpu:1 --export=ALL,N=3 ") &&
                 calls[0].endsWith("tune_array.sh"),
             qPrintable(calls[0]));
    QVERIFY2(calls[1].contains("--dependency=afterany:4242") && calls[1].endsWith("tune_array.sh merge"),
             qPrintable(calls[1]));
  }

  void killedShardResumesToItsSlice() {
    QTemporaryDir dir;
    QCOMPARE(run(rawTune("whole") << "--shard"
                                  << "1/2",
                 dir.path())
                 .code,
             0);
    const QStringList slice = trialKeys(dir.path(), "tuning_runs/whole");
    QVERIFY(slice.size() >= 2 && slice.size() <= 10);  // 12 configs, about half

    killAfterFirstTrial(dir.path(), "killed", "1/2");
    QVERIFY(trialKeys(dir.path(), "tuning_runs/killed").size() < slice.size());

    // Another slice is refused on resume, naming the field; the same one finishes the slice.
    const Result other = run(rawTune("killed") << "--shard"
                                               << "0/2"
                                               << "--resume",
                             dir.path());
    QCOMPARE(other.code, 2);
    QVERIFY2(other.err.contains("--shard differs from the run's: run has 1/2"), qPrintable(other.err));
    const Result r = run(rawTune("killed") << "--resume", dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/killed"), slice);

    // A killed shard that is not resumed does not merge unless asked, and then the merge is partial.
    killAfterFirstTrial(dir.path(), "part0", "0/2");
    const Result refused = run({"merge", "tuning_runs/part0", "tuning_runs/killed", "--run-name", "m"}, dir.path());
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.contains("tuning_runs/part0 (shard 0/2) is running: its trials are partial") &&
                 refused.err.contains("--allow-unfinished"),
             qPrintable(refused.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs/m").exists());
    const Result partial =
        run({"merge", "tuning_runs/part0", "tuning_runs/killed", "--run-name", "m", "--allow-unfinished"}, dir.path());
    QCOMPARE(partial.code, 1);
    QCOMPARE(metadata(dir.path() + "/tuning_runs/m")["state"].toString(), QString("cancelled"));
    const Result apply = run({"apply", "tuning_runs/m", "--registry", "reg", "--accept-flagged"}, dir.path());
    QCOMPARE(apply.code, 2);
    // The merged run is an unsharded run: resuming it measures what the shards left.
    const Result rest = run(rawTune("m") << "--resume", dir.path());
    QVERIFY2(rest.code == 0 && rest.out.contains("finished (12 of 12 configs measured)"),
             qPrintable(rest.out + rest.err));
    const QStringList keys = trialKeys(dir.path(), "tuning_runs/m");
    QCOMPARE(QSet<QString>(keys.begin(), keys.end()).size(), 12);
  }

  // A shard marked finished whose trials.csv ends inside its last row (cut short after the run,
  // as by an interrupted copy) is refused, naming the file and line; merged anyway, or when the
  // shard is unfinished (killed mid-write), that row is left out as resume cuts it off, and the
  // merged run is partial: resuming it measures that trial again.
  void tornRowOfAShard() {
    QTemporaryDir dir;
    for (int i = 0; i < 2; ++i)
      QCOMPARE(run(rawTune(QString("s%1").arg(i)) << "--shard" << QString("%1/2").arg(i), dir.path()).code, 0);
    const QString trials = dir.path() + "/tuning_runs/s1/trials.csv";
    const QByteArray text = readAll(trials);
    writeAll(trials, text.left(text.size() - 5));
    const QString where = "tuning_runs/s1/trials.csv:" + QString::number(text.count('\n'));  // the header is line 1
    const QStringList merge = {"merge", "tuning_runs/s0", "tuning_runs/s1", "--run-name"};
    const Result refused = run(QStringList(merge) << "m", dir.path(), 120000);
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.contains(where + ": the last row of shard 1/2 is torn") &&
                 refused.err.contains("--allow-unfinished"),
             qPrintable(refused.out + refused.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs/m").exists());

    const Result partial = run(QStringList(merge) << "m"
                                                  << "--allow-unfinished",
                               dir.path(), 120000);
    QCOMPARE(partial.code, 1);
    QVERIFY2(partial.out.contains("merged 2 shard(s): 11 trials") &&
                 partial.out.contains("left out the torn last row " + where),
             qPrintable(partial.out + partial.err));
    QCOMPARE(metadata(dir.path() + "/tuning_runs/m")["state"].toString(), QString("cancelled"));
    const Result rest = run(rawTune("m") << "--resume", dir.path());
    QVERIFY2(rest.code == 0 && rest.out.contains("finished (12 of 12 configs measured)"),
             qPrintable(rest.out + rest.err));
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/m").size(), 12);

    // The same shard, unfinished: its torn row is the trial it was writing when killed.
    const QString md = dir.path() + "/tuning_runs/s1/run_metadata.json";
    writeAll(md, readAll(md).replace("\"state\": \"finished\"", "\"state\": \"cancelled\""));
    QCOMPARE(metadata(dir.path() + "/tuning_runs/s1")["state"].toString(), QString("cancelled"));
    const Result unfinished = run(QStringList(merge) << "m2"
                                                     << "--allow-unfinished",
                                  dir.path(), 120000);
    QCOMPARE(unfinished.code, 1);
    QVERIFY2(unfinished.out.contains("merged 2 shard(s): 11 trials") &&
                 unfinished.out.contains("left out the torn last row " + where),
             qPrintable(unfinished.out + unfinished.err));
  }

  void badShardsAreClearErrors_data() {
    QTest::addColumn<QString>("shard");
    QTest::addColumn<QString>("message");
    QTest::newRow("I out of range") << "3/3"
                                    << "I is out of range, shards of 3 are 0/3 to 2/3";
    QTest::newRow("N is 0") << "0/0"
                            << "N is 0";
    QTest::newRow("not I/N") << "two"
                             << "is not I/N";
    QTest::newRow("negative") << "-1/2"
                              << "is not I/N";
  }
  void badShardsAreClearErrors() {
    QFETCH(QString, shard);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const Result r = run(cpuTune("bad") << "--shard" << shard, dir.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QVERIFY(!QDir(dir.path() + "/tuning_runs").exists());
  }

  void shardingAModelGuidedStrategyIsRefused() {
    QTemporaryDir dir;
    const Result r = run(cpuTune("local") << "--shard"
                                          << "0/2"
                                          << "--strategy"
                                          << "local"
                                          << "--budget"
                                          << "8",
                         dir.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("shard with --strategy exhaustive or random"), qPrintable(r.err));
  }

  void badMergesAreClearErrors() {
    QTemporaryDir dir;
    for (int i = 0; i < 2; ++i)
      QCOMPARE(run(rawTune(QString("s%1").arg(i)) << "--shard" << QString("%1/2").arg(i), dir.path()).code, 0);
    QCOMPARE(run(rawTune("seed") << "--shard"
                                 << "1/2"
                                 << "--seed"
                                 << "7",
                 dir.path())
                 .code,
             0);
    QCOMPARE(run(rawTune("three") << "--shard"
                                  << "1/3",
                 dir.path())
                 .code,
             0);
    QCOMPARE(run(rawTune("plain"), dir.path()).code, 0);
    QVERIFY(QDir(dir.path()).mkpath("tuning_runs/copy"));
    for (const char* f : {"run_metadata.json", "trials.csv", "results.json"})
      QVERIFY(QFile::copy(dir.path() + "/tuning_runs/s1/" + f, dir.path() + "/tuning_runs/copy/" + f));

    const QList<QPair<QStringList, QString>> cases = {
        {{"tuning_runs/s0", "tuning_runs/s0/"}, "is given twice (also as tuning_runs/s0): merging a run with itself"},
        {{"tuning_runs/s0", "tuning_runs/nowhere"}, "tuning_runs/nowhere does not exist"},
        {{"tuning_runs/s0"}, "shard(s) 1/2 missing"},
        {{"tuning_runs/s0", "tuning_runs/seed"}, "seed differs"},
        {{"tuning_runs/s0", "tuning_runs/three"}, "the shard count differs"},
        {{"tuning_runs/s0", "tuning_runs/plain"}, "tuning_runs/plain is not a shard"},
        {{"tuning_runs/s0", "tuning_runs/s1", "tuning_runs/copy"}, "are both shard 1/2"},
    };
    for (const auto& [dirs, message] : cases) {
      const Result r = run(QStringList{"merge"} << dirs << "--run-name"
                                                << "out",
                           dir.path());
      QVERIFY2(r.code == 2 && r.err.contains(message), qPrintable(dirs.join(' ') + ": " + r.err));
      QVERIFY(!QDir(dir.path() + "/tuning_runs/out").exists());
    }
    QCOMPARE(run({"merge", "tuning_runs/s0", "tuning_runs/s1", "--run-name", "out"}, dir.path()).code, 0);
    const Result again = run({"merge", "tuning_runs/s0", "tuning_runs/s1", "--run-name", "out"}, dir.path());
    QVERIFY2(again.code == 2 && again.err.contains("already holds a run"), qPrintable(again.err));
    QCOMPARE(trialKeys(dir.path(), "tuning_runs/out"), trialKeys(dir.path(), "tuning_runs/plain"));
  }
};

QTEST_GUILESS_MAIN(TestShards)
#include "test_shards.moc"
