// gemm_a8w8_blockscale from the command line: listed with its space, small tunes of int8 and
// fp8 with bf16 and f32 outputs into a registry, and that registry exported as aiter's files
// under aiter's own names.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

class TestCliA8w8 : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;

 private slots:
  void listedWithItsSpace() {
    const Result k = run({"kernels"});
    QCOMPARE(k.code, 0);
    QVERIFY2(k.out.contains("gemm_a8w8_blockscale  [cpu]") && k.out.contains("q_dtype=fp8_e4m3 out_dtype=bf16"),
             qPrintable(k.out));
    const Result s = run(
        {"space", "gemm_a8w8_blockscale", "--backend", "cpu", "--shape", "M=16 N=2048 K=2048 q_dtype=int8,fp8_e4m3"});
    QVERIFY2(s.code == 0, qPrintable(s.out + s.err));
    QVERIFY2(
        s.out.contains("vnni = [false, true]") && s.out.contains("q_dtype=int8") && s.out.contains("after pruning"),
        qPrintable(s.out));
    const Result bad = run({"tune", "gemm_a8w8_blockscale", "--backend", "cpu", "--shape", "M=16 N=256 K=200", "-q"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("multiple of 128"), qPrintable(bad.err));
  }

  void tuneAndExportAsAiter() {
    const QString registry = tmp.filePath("tuned");
    const Result t = run({"tune",
                          "gemm_a8w8_blockscale",
                          "--backend",
                          "cpu",
                          "--shape",
                          "M=8,64 N=256 K=256 q_dtype=int8,fp8_e4m3 out_dtype=bf16,f32",
                          "--strategy",
                          "random",
                          "--budget",
                          "3",
                          "--seed",
                          "3",
                          "--warmup-ms",
                          "1",
                          "--max-samples",
                          "5",
                          "--remeasure-top",
                          "0",
                          "--max-ms-per-config",
                          "2000",
                          "--run-name",
                          "a8",
                          "--output-dir",
                          tmp.filePath("runs"),
                          "--registry",
                          registry,
                          "--update-registry",
                          "--accept-flagged",
                          "-q"});
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const QStringList files = QDir(registry + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const QString slug = QFileInfo(files[0]).completeBaseName();
    const QJsonObject entries = QJsonDocument::fromJson(readAll(registry + "/cpu/" + files[0]))
                                    .object()["entries"]
                                    .toObject()["gemm_a8w8_blockscale"]
                                    .toObject();
    QCOMPARE(entries.size(), 8);  // 2 M x 2 q_dtype x 2 out_dtype
    QVERIFY(entries.contains("M=64,N=256,K=256,q_dtype=fp8_e4m3,out_dtype=bf16"));

    const QString out = tmp.filePath("aiter");
    const Result e = run({"registry", "export", "--format", "aiter", "--family", "gemm_a8w8_blockscale", "--backend",
                          "cpu", "--registry", registry, "--arch", "gfx942", "-o", out});
    QVERIFY2(e.code == 0, qPrintable(e.out + e.err));
    // The dtypes differ between groups, so they name the files; the family is aiter's tag.
    const QString perNK = out + "/gfx942-GEMM-A8W8_BLOCKSCALE-N=256-K=256-q_dtype=int8-out_dtype=bf16.json";
    QVERIFY2(QFile::exists(perNK), qPrintable(QDir(out).entryList().join(", ")));
    const QJsonObject buckets = QJsonDocument::fromJson(readAll(perNK)).object();
    QVERIFY(buckets.contains("M_LEQ_8") && buckets.contains("M_LEQ_64") && buckets.contains("any"));
    QCOMPARE(buckets["M_LEQ_8"].toObject(),
             entries["M=8,N=256,K=256,q_dtype=int8,out_dtype=bf16"].toObject()["config"].toObject());
    QVERIFY(buckets["M_LEQ_8"].toObject()["vnni"].isBool());
    QCOMPARE(QDir(out).entryList({"*.json"}, QDir::Files).size(), 5);  // 4 (q, out) groups + the default file
    QVERIFY(QFile::exists(out + "/gfx942-GEMM-A8W8_BLOCKSCALE.json"));
  }
};

QTEST_APPLESS_MAIN(TestCliA8w8)
#include "test_cli_a8w8.moc"
