// Runs made under other workload rules than this ktune's (run_metadata.json "workload_rules",
// core/include/ktune/workload_rules.h), through the CLI: a CPU grouped_gemm run from before MoE
// routings followed the seed and the counts alone is not resumed (exit 2 naming the run, both
// versions and what to do; nothing written), a gemm run of that age resumes, a run of newer rules
// is refused whatever its family, and shards made under different rules do not merge, as shards
// of different workload seeds do not.
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// A tiny run of `family` over `shape`: two configs a problem, a second or so.
QStringList tinyTune(const QString& family, const QString& shape, const QString& name) {
  return QStringList{"tune", family, "--backend", "cpu", "--shape", shape, "--strategy", "random", "--budget", "2"} +
         quickMeasure() + QStringList{"--run-name", name, "-q"};
}

const QString kMoe = "experts=4 tokens=8 topk=2 hidden=16 intermediate=16 pass=fwd,dX";
const QString kGemm = "M=16 N=32 K=32";

// The run's run_metadata.json as a run of workload rules `rules` has it (1: without the field).
void recordRules(const QString& run_dir, int rules) {
  QJsonObject meta = QJsonDocument::fromJson(readAll(run_dir + "/run_metadata.json")).object();
  QCOMPARE(meta["workload_rules"].toInt(), 2);  // every new run records this ktune's
  if (rules == 1)
    meta.remove("workload_rules");
  else
    meta["workload_rules"] = rules;
  writeAll(run_dir + "/run_metadata.json", QJsonDocument(meta).toJson());
}

}  // namespace

class TestWorkloadRules : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  Result tune(const QStringList& args) { return run(args, dir_.path()); }
  QString runDir(const QString& name) const { return dir_.path() + "/tuning_runs/" + name; }

 private slots:
  void anOldMoeRunIsNotResumed() {
    const Result made = tune(tinyTune("grouped_gemm", kMoe, "moe"));
    QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
    recordRules(runDir("moe"), 1);
    const QByteArray meta = readAll(runDir("moe") + "/run_metadata.json");
    const QByteArray trials = readAll(runDir("moe") + "/trials.csv");
    const Result r = tune({"tune", "--resume", "--run-name", "moe", "-q"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("cannot resume tuning_runs/moe: its trials were measured on inputs made under workload "
                            "rules 1 (its run_metadata.json records none: it predates them), and this ktune makes "
                            "grouped_gemm's under rules 2"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("Start a new run, or resume it with the ktune that recorded it (one of workload rules 1)"),
             qPrintable(r.err));
    QCOMPARE(readAll(runDir("moe") + "/run_metadata.json"), meta);
    QCOMPARE(readAll(runDir("moe") + "/trials.csv"), trials);
  }

  // gemm's inputs are the same under both rules: its old runs resume, and keep the rules they were made under.
  void anOldGemmRunResumes() {
    const Result made = tune(tinyTune("gemm", kGemm, "gemm"));
    QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
    recordRules(runDir("gemm"), 1);
    const Result r = tune({"tune", "--resume", "--run-name", "gemm", "-q"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QJsonObject meta = QJsonDocument::fromJson(readAll(runDir("gemm") + "/run_metadata.json")).object();
    QCOMPARE(meta["workload_rules"].toInt(), 1);
  }

  void aRunOfNewerRulesIsNotResumed() {
    const Result made = tune(tinyTune("gemm", kGemm, "next"));
    QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
    recordRules(runDir("next"), 3);
    const Result r = tune({"tune", "--resume", "--run-name", "next", "-q"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("made under workload rules 3, and this ktune knows rules up to 2 only"), qPrintable(r.err));
  }

  void shardsOfOtherRulesDoNotMerge() {
    for (const QString shard : {"0", "1"}) {
      const Result made = tune(tinyTune("gemm", "M=16,32 N=32 K=32", "s" + shard) << "--shard" << shard + "/2");
      QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
    }
    recordRules(runDir("s1"), 1);
    const Result r = tune({"merge", "tuning_runs/s0", "tuning_runs/s1", "--run-name", "all"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("cannot merge tuning_runs/s1 with tuning_runs/s0: the workload rules its inputs were made "
                            "under (workload_rules) differs (1 there, 2 in tuning_runs/s0)"),
             qPrintable(r.err));
    QVERIFY(!QDir(runDir("all")).exists());
  }
};

QTEST_GUILESS_MAIN(TestWorkloadRules)
#include "test_workload_rules.moc"
