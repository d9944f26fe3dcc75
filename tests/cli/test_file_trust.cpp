// What ktune reads from disk starts no process and reads no file the user did not name: a worker
// run resumed without --worker shows the recorded command to pass and starts nothing; another
// command than the recorded one is a warning naming both, another backend a refusal; a kernel
// spec's source outside the spec's folder is refused without quoting it, unless
// --allow-source-outside-spec. A run resumed from another folder than it was made in names that
// folder where the worker command's relative paths lead there.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// A script that touches `marker` each time it starts, then runs the raw worker.
QString markedWorker(const QString& dir, const QString& marker) {
  writeAll(dir + "/worker.sh", ("touch " + marker + "\nexec " + rawWorker() + " \"$@\"\n").toUtf8());
  return "sh " + dir + "/worker.sh";
}

QStringList rawTune(const QString& worker, const QString& name = "w") {
  QStringList args{"tune", "--shape", "n=8", "--run-name", name, "--max-ms-per-config", "300", "-q"};
  if (!worker.isEmpty()) args << "--worker" << worker;
  return args;
}

}  // namespace

class TestFileTrust : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString marker_, worker_;

 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 with numpy (apt-get install python3 python3-numpy)");
    QVERIFY(tmp_.isValid());
    marker_ = tmp_.filePath("STARTED");
    worker_ = markedWorker(tmp_.path(), marker_);
    const Result r = run(rawTune(worker_), tmp_.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFile::exists(marker_));
  }

  // The run records a backend this build lacks ('raw'): the message says a worker made it and
  // which command to pass, instead of "unknown backend"; the recorded command is not run.
  void workerRunWithoutWorkerShowsTheCommand() {
    QVERIFY(QFile::remove(marker_));
    const Result r = run(rawTune({}) << "--resume", tmp_.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(!r.err.contains("unknown backend"), qPrintable(r.err));
    QVERIFY2(r.err.contains("was measured by the worker `" + worker_ + "` (backend 'raw')"), qPrintable(r.err));
    QVERIFY2(r.err.contains("starts no command it reads from a run folder"), qPrintable(r.err));
    // Shell-quoted, ready to paste.
    QVERIFY2(r.err.contains("--worker '" + worker_ + "'"), qPrintable(r.err));
    QVERIFY2(!QFile::exists(marker_), "resuming started the recorded worker command");
  }

  // The same command resumes without a word about it.
  void theRecordedWorkerResumesQuietly() {
    const Result r = run(rawTune(worker_) << "--resume", tmp_.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
  }

  void anotherWorkerCommandIsNamedWithTheRecordedOne() {
    const QString other = "env RAW_NOTE=moved " + rawWorker();
    const Result r = run(rawTune(other) << "--resume", tmp_.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("ktune: warning: run tuning_runs/w was measured by the worker `" + worker_ +
                            "`; resuming it with `" + other + "`"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("compare only if"), qPrintable(r.err));
  }

  // A run made with a relative worker path, resumed from another folder: the recorded folder is
  // named (the command's paths start there), and the typed command whose relative path exists only
  // there is refused before anything starts; given absolute, it resumes as the same command.
  void resumeFromAnotherFolderNamesTheRecordedOne() {
    const QString made = QFileInfo(tmp_.filePath("made")).absoluteFilePath();
    const QString elsewhere = tmp_.filePath("elsewhere");
    QVERIFY(QDir().mkpath(made + "/w") && QDir().mkpath(elsewhere));
    QVERIFY(QFile::copy(tmp_.filePath("worker.sh"), made + "/w/worker.sh"));
    const QString runs = tmp_.filePath("runs");
    const auto tune = [&](const QString& worker) { return rawTune(worker, "rel") << "--output-dir" << runs; };
    Result r = run(tune("sh w/worker.sh"), made);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject md = QJsonDocument::fromJson(readAll(runs + "/rel/run_metadata.json")).object();
    QCOMPARE(md["working_directory"].toString(), QFileInfo(made).canonicalFilePath());
    const QString recorded = QFileInfo(made).canonicalFilePath();

    QVERIFY(QFile::remove(marker_));
    r = run(tune({}) << "--resume", elsewhere);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--worker 'sh w/worker.sh' (the run was made in " + recorded +
                            ": cd there or give its paths absolute)"),
             qPrintable(r.err));
    r = run(tune("sh w/worker.sh") << "--resume", elsewhere);
    QCOMPARE(r.code, 2);
    QVERIFY2(
        r.err.contains("`w/worker.sh` in the worker command is not in " + QFileInfo(elsewhere).canonicalFilePath() +
                       " (where ktune runs) but in " + recorded +
                       ", where the run was made: cd there or give an absolute path (" + recorded + "/w/worker.sh)"),
        qPrintable(r.err));
    QVERIFY2(!QFile::exists(marker_), "a worker started although its script is not where it runs");

    r = run(tune("sh " + recorded + "/w/worker.sh") << "--resume", elsewhere);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));  // the same command, its path given absolute
    QVERIFY(QFile::exists(marker_));
  }

  // A worker of another backend measures something else: refused before anything is measured.
  void aWorkerOfAnotherBackendIsRefused() {
    const QString numpy = python() + " " + source("examples/workers/numpy_matmul.py");
    const Result r = run(rawTune(numpy) << "--resume", tmp_.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("serves backend 'numpy', but the run was measured on 'raw'"), qPrintable(r.err));
  }

  void specSourceOutsideItsFolderIsRefused() {
    QDir(tmp_.path()).mkpath("spec");
    writeAll(tmp_.filePath("secret.txt"), "TOPSECRET-LINE-42\n");
    QJsonObject spec = QJsonDocument::fromJson(readAll(source("resources/kernels/cuda/gemm.json"))).object();
    spec["source"] = "../secret.txt";
    writeAll(tmp_.filePath("spec/gemm.json"), QJsonDocument(spec).toJson());
    const QStringList args{"registry",
                           "export",
                           "--format",
                           "aiter",
                           "-o",
                           tmp_.filePath("aiter"),
                           "--backend",
                           "cuda",
                           "--device-slug",
                           "nosuch",
                           "--registry",
                           tmp_.filePath("registry"),
                           "--kernel-spec",
                           tmp_.filePath("spec/gemm.json")};
    Result r = run(args, tmp_.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(tmp_.filePath("spec/gemm.json") + ": source: \"../secret.txt\" resolves to "),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("outside the spec's folder") && r.err.contains("--allow-source-outside-spec"),
             qPrintable(r.err));
    QVERIFY2(!r.err.contains("TOPSECRET"), qPrintable(r.err));
    // Asked for, the spec loads and the command goes on to its registry (which has nothing here).
    r = run(QStringList(args) << "--allow-source-outside-spec", tmp_.path());
    QVERIFY2(!r.err.contains("outside the spec's folder") && !r.err.contains("TOPSECRET"), qPrintable(r.err));
    QVERIFY2(r.err.contains("registry has no gemm entries"), qPrintable(r.err));
  }

  void theFlagIsInHelp() {
    for (const QStringList& command :
         {QStringList{"tune"}, QStringList{"space"}, QStringList{"worker"}, QStringList{"registry", "export"}})
      QVERIFY2(run(QStringList(command) << "--help").out.contains("--allow-source-outside-spec"),
               qPrintable(command.join(' ')));
  }
};

QTEST_GUILESS_MAIN(TestFileTrust)
#include "test_file_trust.moc"
