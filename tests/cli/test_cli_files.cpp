// The CLI and the files it writes: run names that stay under --output-dir, apply and export -o
// through symbolic links (never over devices or folders), temp files of killed writers, and
// standard output that cannot be written; and the files it reads: never a device or a FIFO, never
// one over the size limit ($KTUNE_MAX_FILE_MB).
#include <sys/resource.h>
#include <sys/stat.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

// A generous cap: under ASan on a loaded 2-core CI machine a 2-thread launch of a tiny GEMM
// waits for time slices and takes milliseconds; these tests are about files, not timing.
const QStringList kTinyTune = {
    "tune", "gemm",   "--backend", "cpu",         "--shape", "M=16 N=64 K=64",      "--strategy", "random", "--budget",
    "2",    "--seed", "1",         "--warmup-ms", "1",       "--max-ms-per-config", "1000",       "-q"};

// ktune with a time limit and, outside sanitizer builds (a cap would refuse their shadow memory),
// at most 2 GiB of data: a reader that reads /dev/zero or waits on a FIFO fails the test instead
// of taking the machine's memory or hanging it.
Result runCapped(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
#if !defined(__SANITIZE_ADDRESS__) && !(defined(__has_feature) && __has_feature(address_sanitizer))
  p.setChildProcessModifier([] {
    const rlimit r{rlim_t{2} << 30, rlim_t{2} << 30};
    ::setrlimit(RLIMIT_DATA, &r);
  });
#endif
  p.start(cli(), args);
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

// What the CLI says of `file` made a link to /dev/zero, and made a FIFO.
const QStringList kOddKinds = {"link to /dev/zero", "FIFO"};
QString makeOdd(const QString& file, const QString& kind) {
  QFile::remove(file);
  if (kind == "FIFO") return ::mkfifo(QFile::encodeName(file).constData(), 0600) == 0 ? file + ": it is a FIFO" : "";
  return QFile::link("/dev/zero", file) ? file + " (a link to /dev/zero): it is a character device" : "";
}

}  // namespace

class TestCliFiles : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QString runs, run1;

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary");
    runs = tmp.filePath("out/runs");
    const Result t = run(QStringList(kTinyTune) << "--run-name"
                                                << "r1"
                                                << "--output-dir" << runs);
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    run1 = runs + "/r1";
  }

  void runNameIsOneFolder_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("message");
    QTest::newRow("parent") << "../escape"
                            << "is a path";
    QTest::newRow("absolute") << tmp.filePath("abs") << "is a path";
    QTest::newRow("dot") << "."
                         << "names a folder";
    QTest::newRow("dotdot") << ".."
                            << "names a folder";
    QTest::newRow("too long") << QString(400, 'x') << "longer than the";
  }

  void runNameIsOneFolder() {
    QFETCH(QString, name);
    QFETCH(QString, message);
    const QStringList before = QDir(tmp.filePath("out")).entryList(QDir::AllEntries | QDir::NoDotAndDotDot);
    for (const QStringList& extra : {QStringList{}, QStringList{"--resume"}, QStringList{"--dry-run"}}) {
      const Result r = run(QStringList(kTinyTune) << "--run-name" << name << "--output-dir" << runs << extra);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(message), qPrintable(r.err));
      QVERIFY2(!r.err.contains("filesystem error"), qPrintable(r.err));
    }
    QCOMPARE(QDir(tmp.filePath("out")).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), before);
    QVERIFY(!QFile::exists(tmp.filePath("abs")));
    QCOMPARE(QDir(runs).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList{"r1"});
  }

  void exportWritesThroughALink() {
    const QString real = tmp.filePath("real.csv"), link = tmp.filePath("link.csv");
    writeAll(real, "old");
    QVERIFY(QFile::link("real.csv", link));
    const Result r = run({"export", run1, "--format", "csv", "-o", link});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFileInfo(link).isSymLink());
    QVERIFY(readAll(real).startsWith("id,problem,status"));
  }

  void exportAndApplyRefuseDevicesAndFolders() {
    const Result dev = run({"export", run1, "--format", "json", "-o", "/dev/null"});
    QCOMPARE(dev.code, 2);
    QVERIFY2(dev.err.contains("/dev/null is a character device"), qPrintable(dev.err));
    const Result dir = run({"export", run1, "--format", "json", "-o", tmp.path()});
    QCOMPARE(dir.code, 2);
    QVERIFY2(dir.err.contains("is a directory"), qPrintable(dir.err));

    // A registry file that is a link to a device node.
    const QString reg = tmp.filePath("devreg");
    QVERIFY(QDir().mkpath(reg + "/cpu"));
    const Result first = run({"apply", run1, "--registry", reg, "--accept-flagged"});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    const QStringList files = QDir(reg + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const QString regFile = reg + "/cpu/" + files[0];
    QVERIFY(QFile::remove(regFile));
    QVERIFY(QFile::link("/dev/null", regFile));
    const Result a = run({"apply", run1, "--registry", reg, "--accept-flagged"});
    QCOMPARE(a.code, 2);
    QVERIFY(QFileInfo(regFile).isSymLink());
    QCOMPARE(QFileInfo(regFile).symLinkTarget(), QString("/dev/null"));
  }

  void applyWritesThroughALinkAndCleansUp() {
    const QString reg = tmp.filePath("linkreg"), shared = tmp.filePath("shared");
    QVERIFY(run({"apply", run1, "--registry", reg, "--accept-flagged"}).code == 0);
    const QStringList files = QDir(reg + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const QString regFile = reg + "/cpu/" + files[0];
    // The registry file lives elsewhere (a shared checkout), linked in; a killed apply left a temp.
    QVERIFY(QDir().mkpath(shared));
    const QString target = shared + "/" + files[0];
    QVERIFY(QFile::rename(regFile, target));
    QVERIFY(QFile::link(target, regFile));
    writeAll(shared + "/." + files[0] + ".tmp.Kil1ed", "{\"partial");
    const Result t = run(QStringList(kTinyTune) << "--shape"
                                                << "M=32 N=64 K=64"
                                                << "--run-name"
                                                << "r2"
                                                << "--output-dir" << runs);
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const Result a = run({"apply", runs + "/r2", "--registry", reg, "--accept-flagged"});
    QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
    QVERIFY(QFileInfo(regFile).isSymLink());
    QVERIFY(readAll(target).contains("M=16,N=64,K=64,dtype=f32"));
    QVERIFY(readAll(target).contains("M=32,N=64,K=64,dtype=f32"));
    QCOMPARE(QDir(shared).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{files[0]});
  }

  // Each reader of a user's file, given a link to /dev/zero and a FIFO: exit 2 at once, naming it.
  void readersRefuseDevicesAndFifos() {
    const QString reg = tmp.filePath("oddreg");
    QCOMPARE(run({"apply", run1, "--registry", reg, "--accept-flagged"}).code, 0);
    const QStringList regs = QDir(reg + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(regs.size(), 1);
    QVERIFY(QDir().mkpath(tmp.filePath("odd")));
    QList<QPair<QString, QStringList>> cases = {
        {reg + "/cpu/" + regs[0], {"apply", run1, "--registry", reg, "--accept-flagged"}},
        {tmp.filePath("odd/space.json"),
         {"space", "gemm", "--backend", "cpu", "--space", tmp.filePath("odd/space.json")}},
        {tmp.filePath("odd/cache.json"),
         {"import", "kernel-tuner", tmp.filePath("odd/cache.json"), "--output-dir", tmp.filePath("odd/runs")}}};
    for (const char* f : {"run_metadata.json", "trials.csv"}) {
      const QString copy = tmp.filePath(QString("odd/run_") + f);
      QVERIFY(QDir().mkpath(copy));
      for (const char* g : {"run_metadata.json", "trials.csv", "results.json"})
        QFile::copy(run1 + "/" + g, copy + "/" + g);
      cases.append({copy + "/" + f, {"export", copy, "--format", "json"}});
    }
    for (const auto& [file, args] : cases)
      for (const QString& kind : kOddKinds) {
        const QString said = makeOdd(file, kind);
        QVERIFY2(!said.isEmpty(), qPrintable(file));
        const Result r = runCapped(args);
        QVERIFY2(r.code == 2 && r.err.contains(said) && r.err.contains("not a regular file"),
                 qPrintable(kind + " " + file + ": " + QString::number(r.code) + " " + r.err));
      }
  }

  void fileOverALoweredLimitIsRefused() {
    const QString space = tmp.filePath("big_space.json");
    const QByteArray json = R"({"parameters": {"MR": [4], "NR": [8], "vec": [4], "MC": [16], "KC": [16], "NC": [16],
        "loop_order": [0], "threads": [1]}, "constraints": []})";
    writeAll(space, json + QByteArray((1 << 20) + 1 - json.size(), ' '));  // 1 MiB and a byte
    const QStringList args = {"space", "gemm", "--backend", "cpu", "--space", space};
    const Result over = runCapped(args, envWith("KTUNE_MAX_FILE_MB", "1"));
    QCOMPARE(over.code, 2);
    QVERIFY2(over.err.contains("cannot read search space " + space +
                               ": it is 1.1 MiB, over the limit of 1 MiB per file (set by KTUNE_MAX_FILE_MB); if it "
                               "is the right file, raise the limit, e.g. KTUNE_MAX_FILE_MB=3"),
             qPrintable(over.err));
    const Result raised = runCapped(args, envWith("KTUNE_MAX_FILE_MB", "2"));
    QVERIFY2(raised.code == 0, qPrintable(raised.err));
    const Result bad = runCapped(args, envWith("KTUNE_MAX_FILE_MB", "1GB"));
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("KTUNE_MAX_FILE_MB='1GB' is not a size"), qPrintable(bad.err));
    QVERIFY(runCapped({"--help"}).out.contains("KTUNE_MAX_FILE_MB=<MiB> changes that limit (default 2048)"));
  }

  void unwritableStdoutIsAnError() {
    const Result csv = run({"export", run1, "--format", "csv"}, {}, 60000, "/dev/full");
    QVERIFY(csv.code != 0);
    QVERIFY2(csv.err.contains("cannot write to standard output"), qPrintable(csv.err));
    // A short output, that only fails when flushed at exit.
    const Result devices = run({"kernels"}, {}, 60000, "/dev/full");
    QVERIFY(devices.code != 0);
    QVERIFY2(devices.err.contains("cannot write to standard output"), qPrintable(devices.err));
    QCOMPARE(run({"kernels"}, {}, 60000, tmp.filePath("kernels.txt")).code, 0);
    QVERIFY(readAll(tmp.filePath("kernels.txt")).contains("gemm"));
  }
};

QTEST_GUILESS_MAIN(TestCliFiles)
#include "test_cli_files.moc"
