// The registry as the seed tools' users expect, from the command line: local keys whatever
// --tp-size tuned them, explicit config lists, aiter export, tpu-tune import, the H100 default.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

QJsonObject readJson(const QString& path) { return QJsonDocument::fromJson(readAll(path)).object(); }

}  // namespace

class TestCliRegistry : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QString runs, registry, regFile;

 private slots:
  void initTestCase() {
    QVERIFY(tmp.isValid());
    runs = tmp.filePath("runs");
    registry = tmp.filePath("tuned");
  }

  void tpTunedShapeIsFoundByItsLocalShape() {
    // Column parallel over 2: N=128 global is N=64 local.
    const Result t = run({"tune",
                          "gemm",
                          "--backend",
                          "cpu",
                          "--shape",
                          "M=16,64 N=128 K=64",
                          "--tp-size",
                          "2",
                          "--tp-split-dim",
                          "out",
                          "--strategy",
                          "random",
                          "--budget",
                          "3",
                          "--seed",
                          "5",
                          "--warmup-ms",
                          "1",
                          "--max-ms-per-config",
                          "2000",
                          "--run-name",
                          "tp",
                          "--output-dir",
                          runs,
                          "--registry",
                          registry,
                          "--update-registry",
                          "--accept-flagged",
                          "-q"});
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const QStringList files = QDir(registry + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    regFile = registry + "/cpu/" + files[0];
    const QJsonObject gemm = readJson(regFile)["entries"].toObject()["gemm"].toObject();
    QVERIFY2(gemm.contains("M=16,N=64,K=64,dtype=f32"), qPrintable(QJsonDocument(gemm).toJson()));
    const QJsonObject meta = gemm["M=16,N=64,K=64,dtype=f32"].toObject()["metadata"].toObject();
    QCOMPARE(meta["tp_size"].toInt(), 2);
    QCOMPARE(meta["tp_split_dim"].toString(), QString("out"));

    // By hand (the local shape) and automatically (--tp-size): the same entry.
    const Result manual =
        run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape", "M=16 N=64 K=64"});
    QVERIFY2(manual.out.contains("(exact M=16,N=64,K=64,dtype=f32)"), qPrintable(manual.out + manual.err));
    const Result automatic = run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape",
                                  "M=16 N=128 K=64", "--tp-size", "2", "--tp-split-dim", "out"});
    QVERIFY2(automatic.out.contains("(exact M=16,N=64,K=64,dtype=f32)"), qPrintable(automatic.out + automatic.err));
    QVERIFY(automatic.err.isEmpty());
  }

  // Attention shards heads, with no --tp-split-dim: every config comes out ok or honestly failed,
  // the entry is keyed by the local heads (kv heads replicated to 1) with tp in its metadata.
  void pagedAttentionTunesTheLocalHeads() {
    const QString shape = "num_sequences=3 num_q_heads=16 num_kv_heads=2 head_dim=24 page_size=4 max_model_len=37";
    const Result t = run({"tune",
                          "paged_attention",
                          "--backend",
                          "cpu",
                          "--shape",
                          shape,
                          "--tp-size",
                          "4",
                          "--strategy",
                          "random",
                          "--budget",
                          "12",
                          "--seed",
                          "3",
                          "--warmup-ms",
                          "1",
                          "--max-ms-per-config",
                          "20000",
                          "--run-name",
                          "pa",
                          "--output-dir",
                          runs,
                          "--registry",
                          registry,
                          "--update-registry",
                          "--accept-flagged",
                          "-q"});
    QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
    const QStringList trials = QString(readAll(runs + "/pa/trials.csv")).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(trials.size(), 13);
    for (const QString& row : trials.mid(1))
      QVERIFY2(row.contains(",ok,") || row.contains(",slow_abort,"), qPrintable(row));
    const QString local =
        "num_sequences=3,num_q_heads=4,num_kv_heads=1,head_dim=24,page_size=4,max_model_len=37,dtype=f32";
    const QStringList files = QDir(registry + "/cpu").entryList({"*.json"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    const QJsonObject pa = readJson(registry + "/cpu/" + files[0])["entries"].toObject()["paged_attention"].toObject();
    QVERIFY2(pa.contains(local), qPrintable(QJsonDocument(pa).toJson()));
    QCOMPARE(pa[local].toObject()["metadata"].toObject()["tp_split_dim"].toString(), QString("heads"));
    const Result manual =
        run({"lookup", "paged_attention", "--backend", "cpu", "--registry", registry, "--shape",
             "num_sequences=3 num_q_heads=4 num_kv_heads=1 head_dim=24 page_size=4 max_model_len=37"});
    QVERIFY2(manual.out.contains("(exact " + local + ")"), qPrintable(manual.out + manual.err));

    const Result bad = run({"tune", "paged_attention", "--backend", "cpu", "--shape",
                            "num_sequences=1 num_q_heads=12 num_kv_heads=4 head_dim=8 page_size=4 max_model_len=8",
                            "--tp-size", "8", "--no-save"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("num_q_heads=12 is not divisible by --tp-size 8"), qPrintable(bad.err));
    const Result gqa =
        run({"tune", "paged_attention", "--backend", "cpu", "--shape",
             "num_sequences=1 num_q_heads=12 num_kv_heads=8 head_dim=8 page_size=4 max_model_len=8", "--no-save"});
    QCOMPARE(gqa.code, 2);
    QVERIFY2(gqa.err.contains("num_q_heads=12, num_kv_heads=8: num_q_heads must be a multiple of num_kv_heads"),
             qPrintable(gqa.err));
  }

  void oldTpKeysAreMigrated() {
    QTemporaryDir dir;
    QJsonObject doc = readJson(regFile);
    QJsonObject gemm = doc["entries"].toObject()["gemm"].toObject();
    const QJsonValue e = gemm.take("M=16,N=64,K=64,dtype=f32");
    gemm["M=16,N=64,K=64,dtype=f32,tp=2/out"] = e;
    QJsonObject entries = doc["entries"].toObject();
    entries["gemm"] = gemm;
    doc["entries"] = entries;
    QDir().mkpath(dir.filePath("cpu"));
    const QString old = dir.filePath("cpu/" + QFileInfo(regFile).fileName());
    writeAll(old, QJsonDocument(doc).toJson());
    const Result r = run({"lookup", "gemm", "--backend", "cpu", "--registry", dir.path(), "--shape", "M=16 N=64 K=64"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("(exact M=16,N=64,K=64,dtype=f32)"), qPrintable(r.out + r.err));
    QVERIFY2(r.err.contains("migrated gemm M=16,N=64,K=64,dtype=f32,tp=2/out -> M=16,N=64,K=64,dtype=f32"),
             qPrintable(r.err));
  }

  void explicitConfigListSpace() {
    // The tuned configs, as a TileLang-style list.
    const QJsonObject gemm = readJson(regFile)["entries"].toObject()["gemm"].toObject();
    QJsonArray configs;
    for (const auto& e : gemm)
      if (!configs.contains(e.toObject()["config"])) configs.append(e.toObject()["config"]);
    const QString space = tmp.filePath("list.json");
    writeAll(space, QJsonDocument(QJsonObject{{"configs", configs}}).toJson());
    const Result s = run({"space", "gemm", "--backend", "cpu", "--space", space, "--shape", "M=16 N=64 K=64"});
    QVERIFY2(s.code == 0, qPrintable(s.out + s.err));
    QVERIFY2(s.out.contains(QString("a list of %1 configs").arg(configs.size())), qPrintable(s.out));
    QVERIFY2(s.out.contains(QString("%1 configs, ").arg(configs.size())), qPrintable(s.out));
    const Result d =
        run({"tune", "gemm", "--backend", "cpu", "--space", space, "--shape", "M=16 N=64 K=64", "--dry-run"});
    QVERIFY2(d.code == 0, qPrintable(d.out + d.err));

    // A config with an unknown parameter is named.
    QJsonObject bad = configs[0].toObject();
    bad["BX"] = 3;
    writeAll(space, QJsonDocument(QJsonObject{{"configs", QJsonArray{configs[0], bad}}}).toJson());
    const Result e = run({"space", "gemm", "--backend", "cpu", "--space", space});
    QCOMPARE(e.code, 2);
    QVERIFY2(e.err.contains("config #2") && e.err.contains("'BX'"), qPrintable(e.err));
  }

  void exportAiter() {
    const QString out = tmp.filePath("aiter");
    const QString slug = QFileInfo(regFile).completeBaseName();
    // aiter names its files by GPU architecture: a CPU's registry needs --arch, and says so.
    const Result noArch = run({"registry", "export", "--format", "aiter", "--family", "gemm", "--backend", "cpu",
                               "--registry", registry, "-o", out});
    QCOMPARE(noArch.code, 2);
    QVERIFY2(noArch.err.contains("give it with --arch") && noArch.err.contains(slug), qPrintable(noArch.err));
    const Result r = run({"registry", "export", "--format", "aiter", "--family", "gemm", "--backend", "cpu",
                          "--registry", registry, "--arch", "gfx942", "-o", out});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QJsonObject perNK = readJson(out + "/gfx942-GEMM-GEMM-N=64-K=64.json");
    QVERIFY2(perNK.contains("M_LEQ_16") && perNK.contains("M_LEQ_64") && perNK.contains("any"), qPrintable(r.out));
    QCOMPARE(perNK["M_LEQ_16"].toObject(), readJson(regFile)["entries"]
                                               .toObject()["gemm"]
                                               .toObject()["M=16,N=64,K=64,dtype=f32"]
                                               .toObject()["config"]
                                               .toObject());
    QVERIFY(readJson(out + "/gfx942-GEMM-GEMM.json").contains("any"));
    // The seed guide's layout, named by the device slug as before.
    const Result guide = run({"registry", "export", "--format", "aiter-guide", "--family", "gemm", "--backend", "cpu",
                              "--registry", registry, "-o", out});
    QVERIFY2(guide.code == 0, qPrintable(guide.out + guide.err));
    QVERIFY(readJson(out + "/" + slug + "-GEMM-GEMM-N=64-K=64.json").contains("small"));
    // Another family's registry is empty: a clear error.
    const Result none = run({"registry", "export", "--format", "aiter", "--family", "qmatmul", "--backend", "cpu",
                             "--registry", registry, "-o", out});
    QCOMPARE(none.code, 2);
    QVERIFY2(none.err.contains("no qmatmul entries"), qPrintable(none.err));
    // The output must be a folder.
    const Result file = run({"registry", "export", "--format", "aiter", "--family", "gemm", "--backend", "cpu",
                             "--registry", registry, "--arch", "gfx942", "-o", regFile});
    QCOMPARE(file.code, 2);
    QVERIFY2(file.err.contains("as the output folder"), qPrintable(file.err));
  }

  void importTpuTune() {
    const QJsonObject config = readJson(regFile)["entries"]
                                   .toObject()["gemm"]
                                   .toObject()["M=16,N=64,K=64,dtype=f32"]
                                   .toObject()["config"]
                                   .toObject();
    const QString file = tmp.filePath("tpu_v6e.json");
    QJsonObject stats{{"latency_avg_ns", 4500.0}, {"latency_std_ns", 120.0}, {"compile_time_s", 0.5}};
    writeAll(
        file,
        QJsonDocument(
            QJsonObject{{"8,96,64",
                         QJsonObject{{"config", config},
                                     {"stats", stats},
                                     {"metadata", QJsonObject{{"benchmarking_method", "xprof"},
                                                              {"samples_ns", QJsonArray{4600.0, 4400.0, 4300.0}}}}}}})
            .toJson());
    const QStringList args = {"registry",     "import", "--format",  "tpu-tune", file,         "--family", "gemm",
                              "--key-fields", "M,N,K",  "--backend", "cpu",      "--registry", registry};
    const Result r = run(args);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("median of samples_ns for 1"), qPrintable(r.out));
    const QJsonObject e =
        readJson(regFile)["entries"].toObject()["gemm"].toObject()["M=8,N=96,K=64,dtype=f32"].toObject();
    QCOMPARE(e["stats"].toObject()["latency_median_ns"].toDouble(), 4400.0);
    QCOMPARE(e["metadata"].toObject()["imported_from"].toString(), QString("tpu-inference tpu_v6e.json"));
    QVERIFY(QFile::exists(regFile + ".bak"));
    const Result l = run({"lookup", "gemm", "--backend", "cpu", "--registry", registry, "--shape", "M=8 N=96 K=64"});
    QVERIFY2(l.out.contains("(exact M=8,N=96,K=64,dtype=f32)"), qPrintable(l.out));
    // Again: kept unless --force.
    const Result again = run(args);
    QVERIFY2(again.out.contains("kept gemm M=8,N=96,K=64,dtype=f32") && again.out.contains("unchanged"),
             qPrintable(again.out));

    // A config the family does not know is refused, naming the key and the parameter; nothing written.
    const QByteArray before = readAll(regFile);
    QJsonObject bad = config;
    bad["block_size_1"] = 128;
    writeAll(file, QJsonDocument(QJsonObject{{"8,96,64", QJsonObject{{"config", bad}, {"stats", stats}}}}).toJson());
    const Result b = run(QStringList(args) << "--force");
    QCOMPARE(b.code, 2);
    QVERIFY2(b.err.contains("\"8,96,64\"") && b.err.contains("unknown parameter 'block_size_1'"), qPrintable(b.err));
    QCOMPARE(readAll(regFile), before);
    const Result noFields = run({"registry", "import", "--format", "tpu-tune", file, "--family", "gemm"});
    QCOMPARE(noFields.code, 2);
    QVERIFY2(noFields.err.contains("--key-fields"), qPrintable(noFields.err));
  }

  void shippedH100DefaultIsOneHopperAllows() {
    // Device properties as `ktune devices --json` prints them on an H100.
    const QString dev = tmp.filePath("h100.json");
    writeAll(dev, R"({"backend": "cuda", "index": 0, "name": "NVIDIA H100 80GB HBM3", "properties": {"cc_major": 9,
      "cc_minor": 0, "smem_per_block_optin": 232448, "smem_per_block": 49152, "max_threads_per_block": 1024,
      "regs_per_block": 65536, "warp_size": 32, "sms": 132, "l2_bytes": 52428800}})");
    const Result r = run({"lookup", "gemm", "--backend", "cuda", "--kernel-spec",
                          source("resources/kernels/cuda/gemm.json"), "--device-slug", "nvidia-h100-80gb-hbm3",
                          "--registry", source("tuned_data"), "--device-json", dev, "--shape", "M=64 N=8192 K=4096"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("(default)") && r.out.contains("WGMMA=1"), qPrintable(r.out + r.err));
    QVERIFY2(r.err.contains("M=64,N=8192,K=4096,dtype=f16") && r.err.contains("ktune tune gemm --backend cuda"),
             qPrintable(r.err));
    const Result near = run({"lookup", "gemm", "--backend", "cuda", "--kernel-spec",
                             source("resources/kernels/cuda/gemm.json"), "--device-slug", "nvidia-h100-80gb-hbm3",
                             "--registry", source("tuned_data"), "--shape", "M=20 N=4096 K=4096"});
    QVERIFY2(near.out.contains("(nearest bucket M=128,N=4096,K=4096,dtype=f16)"), qPrintable(near.out + near.err));
  }
};

QTEST_GUILESS_MAIN(TestCliRegistry)
#include "test_cli_registry.moc"
