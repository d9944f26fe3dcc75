// The CLI and the files it writes: run names that stay under --output-dir, apply and export -o
// through symbolic links (never over devices or folders), temp files of killed writers, and
// standard output that cannot be written.
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
