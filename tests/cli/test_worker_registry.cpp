// The registry commands on families tuned through a worker, which this build has no backend for:
// the numpy example worker (backend "numpy", bucket field M) and the raw-protocol worker (backend
// "raw", no bucket field). The run records the worker's family; diff and apply take the run,
// apply keeps the family in the registry file, and lookup, `registry export` and `registry import`
// find it there or through --family-from RUN_DIR. A family nobody describes is an error that
// says what to pass.
#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

QJsonObject readJson(const QString& path) { return QJsonDocument::fromJson(readAll(path)).object(); }

// Every object with a "block" member anywhere in `v`: the configs a written file holds, whatever
// its layout.
void collectConfigs(const QJsonValue& v, QList<QJsonObject>& out) {
  if (v.isArray())
    for (const auto& x : v.toArray()) collectConfigs(x, out);
  if (!v.isObject()) return;
  const QJsonObject o = v.toObject();
  if (o.contains("block")) out << o;
  for (const auto& x : o) collectConfigs(x, out);
}

}  // namespace

class TestWorkerRegistry : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QString runDir, registry, slug, regFile;
  QJsonObject winner16;  // results.json's config for M=16

  QString numpyWorker() const { return python() + " " + source("examples/workers/numpy_matmul.py"); }
  // The registry arguments of the numpy worker's registry, named without a built-in backend.
  QStringList numpyTarget() const { return {"--backend", "numpy", "--device-slug", slug, "--registry", registry}; }

 private slots:
  void initTestCase() {
    QVERIFY2(!python().isEmpty(), "configure found no python3 with numpy (apt-get install python3 python3-numpy)");
    QVERIFY(tmp.isValid());
    registry = tmp.filePath("tuned");
    const Result t = run({"tune", "--worker", numpyWorker(), "--shape", "M=16,128 N=64 K=64", "--budget", "3",
                          "--warmup-ms", "1", "--max-ms-per-config", "300", "--run-name", "np", "--output-dir",
                          tmp.filePath("runs"), "--registry", registry, "-q"});
    QVERIFY2(t.code == 0 || t.code == 1, qPrintable(t.out + t.err));
    runDir = tmp.filePath("runs/np");
    const QJsonObject md = readJson(runDir + "/run_metadata.json");
    slug = md["device"].toObject()["slug"].toString();
    QVERIFY(!slug.isEmpty());
    regFile = registry + "/numpy/" + slug + ".json";
    for (const auto& e : readJson(runDir + "/results.json")["results"].toArray())
      if (e.toObject()["problem"].toObject()["key"].toString().startsWith("M=16,"))
        winner16 = e.toObject()["config"].toObject();
    QVERIFY2(winner16.contains("block"), qPrintable(QString(readAll(runDir + "/results.json"))));
  }

  void runRecordsTheWorkersFamily() {
    const QJsonObject d = readJson(runDir + "/run_metadata.json")["family_description"].toObject();
    QCOMPARE(d["name"].toString(), QString("numpy_matmul"));
    QCOMPARE(d["bucket_field"].toString(), QString("M"));
    QCOMPARE(d["key_fields"].toArray().size(), 4);
    QCOMPARE(d["space"].toObject()["constraints"].toArray().size(), 1);
  }

  void diffAndApplyKeepTheFamilyInTheRegistry() {
    const Result d = run({"diff", runDir, "--registry", registry});
    // The class column is as wide as its widest class: "new (flagged)" where a noisy host left a
    // winner short of the noise target.
    const QRegularExpression newRow(
        QStringLiteral("(^|\\n)new( \\(flagged\\))?\\s+numpy_matmul\\s+M=16,N=64,K=64,dtype=f32"));
    QVERIFY2(d.code == 0 && newRow.match(d.out).hasMatch(), qPrintable(d.out + d.err));
    const Result a = run({"apply", runDir, "--registry", registry, "--accept-flagged"});
    QVERIFY2(a.code == 0 && a.out.contains("wrote numpy_matmul M=16,N=64,K=64,dtype=f32"), qPrintable(a.out + a.err));
    const QJsonObject reg = readJson(regFile);
    QCOMPARE(reg["entries"].toObject()["numpy_matmul"].toObject().size(), 2);
    QCOMPARE(reg["families"].toObject()["numpy_matmul"].toObject(),
             readJson(runDir + "/run_metadata.json")["family_description"].toObject());
    // Diff again: the same configs, now in the registry.
    const Result again = run({"diff", runDir, "--registry", registry});
    QVERIFY2(again.code == 0 && !newRow.match(again.out).hasMatch(), qPrintable(again.out));
  }

  void lookupFindsTheFamilyInTheRegistry() {
    const Result exact = run(QStringList{"lookup", "numpy_matmul", "--shape", "M=16 N=64 K=64"} + numpyTarget());
    QVERIFY2(exact.code == 0, qPrintable(exact.err));
    const QString config =
        QString("block=%1,order=%2").arg(winner16["block"].toInteger()).arg(winner16["order"].toString());
    QVERIFY2(exact.out.contains("M=16,N=64,K=64,dtype=f32: " + config + "  (exact"), qPrintable(exact.out));
    // The family's bucket field is the worker's: M=9 rounds up to the tuned M=16.
    const Result bucket = run(QStringList{"lookup", "numpy_matmul", "--shape", "M=9 N=64 K=64"} + numpyTarget());
    QVERIFY2(bucket.out.contains("(nearest bucket M=16,N=64,K=64,dtype=f32)"), qPrintable(bucket.out + bucket.err));
    // The shape is tuned through the worker: the warning does not name a backend this build lacks.
    QVERIFY2(bucket.err.contains("ktune tune numpy_matmul --worker \"<its worker's command>\" --shape \"M=9 N=64"),
             qPrintable(bucket.err));
    // The worker's key fields: its dtype choices hold.
    const Result dtype =
        run(QStringList{"lookup", "numpy_matmul", "--shape", "M=16 N=64 K=64 dtype=f16"} + numpyTarget());
    QCOMPARE(dtype.code, 2);
    QVERIFY2(dtype.err.contains("f16"), qPrintable(dtype.err));
  }

  void lookupFromTheRun() {
    // No backend, device or family named: the run gives them, and its device's properties.
    const Result r = run({"lookup", "--family-from", runDir, "--registry", registry, "--shape", "M=16 N=64 K=64"});
    QVERIFY2(r.code == 0 && r.out.contains("(exact M=16,N=64,K=64,dtype=f32)"), qPrintable(r.out + r.err));
    const Result other = run({"lookup", "gemm", "--family-from", runDir, "--registry", registry, "--shape", "M=16"});
    QCOMPARE(other.code, 2);
    QVERIFY2(other.err.contains("a run of numpy_matmul on the numpy backend") && other.err.contains("not of gemm"),
             qPrintable(other.err));
    const Result backend = run({"lookup", "--family-from", runDir, "--backend", "cpu", "--shape", "M=16 N=64 K=64"});
    QCOMPARE(backend.code, 2);
    QVERIFY2(backend.err.contains("leave out --backend cpu"), qPrintable(backend.err));
  }

  // Every format that applies to the worker's family (its bucket field is M, its keys M,N,K,dtype).
  void exportEveryFormat_data() {
    QTest::addColumn<QStringList>("format");
    QTest::newRow("aiter") << QStringList{"aiter", "--arch", "gfx942"};
    QTest::newRow("aiter-guide") << QStringList{"aiter-guide"};
    QTest::newRow("tpu-inference") << QStringList{"tpu-inference", "--key-fields", "M,N,K,dtype"};
  }
  void exportEveryFormat() {
    QFETCH(QStringList, format);
    const QString out = tmp.filePath("export-" + format.first());
    const Result r = run(QStringList{"registry", "export", "--family", "numpy_matmul", "-o", out, "--format"} + format +
                         numpyTarget());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QStringList files;
    QList<QJsonObject> configs;
    for (QDirIterator it(out, {"*.json"}, QDir::Files, QDirIterator::Subdirectories); it.hasNext();) {
      files << QDir(out).relativeFilePath(it.next());
      collectConfigs(readJson(it.filePath()), configs);
    }
    files.sort();
    QVERIFY2(!files.isEmpty(), qPrintable(r.out));
    // The tuned M=16 config is in the files, with the worker's parameters.
    QVERIFY2(configs.contains(winner16), qPrintable(r.out));
    // The same files through the run, which names the backend, device and family.
    const QString viaRun = out + "-run";
    const Result r2 = run(
        QStringList{"registry", "export", "--family-from", runDir, "--registry", registry, "-o", viaRun, "--format"} +
        format);
    QVERIFY2(r2.code == 0, qPrintable(r2.err));
    for (const auto& f : files) QCOMPARE(readAll(viaRun + "/" + f), readAll(out + "/" + f));
  }

  void importIntoTheWorkersRegistry() {
    const QString file = tmp.filePath("tpu.json");
    const QJsonObject config{{"block", 32}, {"order", "col"}};
    const QJsonObject stats{{"latency_avg_ns", 4500.0}, {"latency_std_ns", 120.0}, {"compile_time_s", 0.5}};
    writeAll(file,
             QJsonDocument(QJsonObject{{"32,64,64", QJsonObject{{"config", config}, {"stats", stats}}}}).toJson());
    // The family from the registry file's description.
    const Result r = run(QStringList{"registry", "import", "--format", "tpu-tune", file, "--family", "numpy_matmul",
                                     "--key-fields", "M,N,K"} +
                         numpyTarget());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QCOMPARE(readJson(regFile)["entries"]
                 .toObject()["numpy_matmul"]
                 .toObject()["M=32,N=64,K=64,dtype=f32"]
                 .toObject()["config"]
                 .toObject(),
             config);
    // A parameter the worker's family lacks is refused, as for a built-in family.
    writeAll(file, QJsonDocument(
                       QJsonObject{{"8,64,64", QJsonObject{{"config", QJsonObject{{"tile", 8}}}, {"stats", stats}}}})
                       .toJson());
    const Result bad = run(QStringList{"registry", "import", "--format", "tpu-tune", file, "--family", "numpy_matmul",
                                       "--key-fields", "M,N,K"} +
                           numpyTarget());
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("tile"), qPrintable(bad.err));

    // Into an empty registry: the family from the run, and the registry keeps it from then on.
    writeAll(file,
             QJsonDocument(QJsonObject{{"32,64,64", QJsonObject{{"config", config}, {"stats", stats}}}}).toJson());
    const QString fresh = tmp.filePath("fresh");
    const Result viaRun = run({"registry", "import", "--format", "tpu-tune", file, "--key-fields", "M,N,K",
                               "--family-from", runDir, "--registry", fresh});
    QVERIFY2(viaRun.code == 0, qPrintable(viaRun.out + viaRun.err));
    const QJsonObject kept = readJson(fresh + "/numpy/" + slug + ".json")["families"].toObject();
    QCOMPARE(kept["numpy_matmul"].toObject()["name"].toString(), QString("numpy_matmul"));
    const Result l = run({"lookup", "numpy_matmul", "--backend", "numpy", "--device-slug", slug, "--registry", fresh,
                          "--shape", "M=32 N=64 K=64"});
    QVERIFY2(l.out.contains("M=32,N=64,K=64,dtype=f32: block=32,order=col  (exact"), qPrintable(l.out + l.err));
  }

  // aiter's files of the worker's family (exportEveryFormat's) read back into an empty registry.
  void importAiterFiles() {
    const QString fresh = tmp.filePath("fromaiter");
    const Result r = run({"registry", "import", "--format", "aiter", tmp.filePath("export-aiter"), "--family-from",
                          runDir, "--registry", fresh});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QJsonObject reg = readJson(fresh + "/numpy/" + slug + ".json");
    QCOMPARE(reg["entries"]
                 .toObject()["numpy_matmul"]
                 .toObject()["M=16,N=64,K=64,dtype=f32"]
                 .toObject()["config"]
                 .toObject(),
             winner16);
    QVERIFY(reg["families"].toObject().contains("numpy_matmul"));
  }

  void remeasureNeedsTheBackend() {
    // Re-measuring times configs on the run's backend: a worker's run says so, and apply without it works.
    const Result r = run({"apply", runDir, "--registry", registry, "--remeasure"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("not built into this ktune") && r.err.contains("leave out --remeasure"), qPrintable(r.err));
  }

  void unknownFamilySaysWhatToPass() {
    // The case: a worker's backend and family that nothing describes.
    const Result r = run({"registry", "export", "--format", "aiter", "--family", "gemm_a8w8_blockscale", "--backend",
                          "triton", "--device-slug", "mi300x", "--registry", registry, "-o", tmp.filePath("x")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("'triton' backend is not built into this ktune") &&
                 r.err.contains("there is no registry " + registry + "/triton/mi300x.json") &&
                 r.err.contains("--family-from RUN_DIR"),
             qPrintable(r.err));
    // A registry that describes other families only.
    const Result other = run(QStringList{"lookup", "triton_gemm", "--shape", "M=16"} + numpyTarget());
    QCOMPARE(other.code, 2);
    QVERIFY2(other.err.contains("keeps no description of family 'triton_gemm'") && other.err.contains("--family-from"),
             qPrintable(other.err));
    // A built-in backend without that family says so too.
    const Result cpu = run({"lookup", "nosuch", "--backend", "cpu", "--registry", registry, "--shape", "M=16"});
    QCOMPARE(cpu.code, 2);
    QVERIFY2(cpu.err.contains("unknown kernel 'nosuch' on the cpu backend") &&
                 cpu.err.contains("to describe family 'nosuch': pass --family-from RUN_DIR"),
             qPrintable(cpu.err));
    // Without a device slug, a worker's backend cannot name the registry file: the error lists them.
    const Result noSlug =
        run({"lookup", "numpy_matmul", "--backend", "numpy", "--registry", registry, "--shape", "M=16 N=64 K=64"});
    QCOMPARE(noSlug.code, 2);
    QVERIFY2(noSlug.err.contains("--device-slug") && noSlug.err.contains("holds: " + slug), qPrintable(noSlug.err));
    // --family-from a folder that is no run.
    const Result notRun = run({"lookup", "--family-from", registry, "--shape", "M=16"});
    QCOMPARE(notRun.code, 2);
    QVERIFY2(notRun.err.contains("run_metadata.json"), qPrintable(notRun.err));
  }

  void rawWorkerWithoutBucketField() {
    // The raw-protocol worker: key field n, no bucket field, no source given in its hello; applied by
    // the tune itself (--update-registry).
    const QString raw = tmp.filePath("raw");
    const Result t = run({"tune", "--worker", rawWorker(), "--shape", "n=8", "--run-name", "raw", "--output-dir",
                          tmp.filePath("runs"), "--registry", raw, "--update-registry", "--accept-flagged", "-q"});
    QVERIFY2(t.code == 0 || t.code == 1, qPrintable(t.out + t.err));
    const QString rawRun = tmp.filePath("runs/raw");
    const QJsonObject kept = readJson(raw + "/raw/raw-device.json")["families"].toObject()["raw"].toObject();
    QCOMPARE(kept["key_fields"].toArray().first().toObject()["name"].toString(), QString("n"));
    const Result l =
        run({"lookup", "raw", "--backend", "raw", "--device-slug", "raw-device", "--registry", raw, "--shape", "n=8"});
    QVERIFY2(l.code == 0 && l.out.contains("n=8: x=1  (exact n=8)"), qPrintable(l.out + l.err));
    // aiter's files bucket by M: a family without a bucket field is refused, saying so.
    const Result e = run({"registry", "export", "--format", "aiter", "--family-from", rawRun, "--registry", raw, "-o",
                          tmp.filePath("rawaiter")});
    QCOMPARE(e.code, 2);
    QVERIFY2(e.err.contains("raw has no bucket field"), qPrintable(e.err));
  }
};

QTEST_GUILESS_MAIN(TestWorkerRegistry)
#include "test_worker_registry.moc"
