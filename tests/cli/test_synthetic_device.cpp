// KTUNE_CPU_DEVICE through the CLI: `ktune devices` shows the synthetic device, a run records
// it, the micro-kernels follow its ISA (a wider vector fails as it would on such a machine), and
// a malformed value or an ISA the host lacks is a clear error (exit 2). Every call sets or
// removes the variable itself: CI runs the suites under synthetic devices too.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_support.h"

namespace {

const QString kSmall = "l1d=32K l2=256K l3=2M cores=1 threads=1 isa=portable";

QProcessEnvironment device(const QString& spec) {
  auto env = QProcessEnvironment::systemEnvironment();
  if (spec.isNull())
    env.remove("KTUNE_CPU_DEVICE");
  else
    env.insert("KTUNE_CPU_DEVICE", spec);
  return env;
}

// The cpu device of `ktune devices --json` (empty when the command failed).
QJsonObject cpuDevice(const QProcessEnvironment& env) {
  const Result r = run({"devices", "--json"}, {}, env);
  for (const auto& d : QJsonDocument::fromJson(r.out.toUtf8()).array())
    if (d.toObject()["backend"].toString() == "cpu") return d.toObject();
  return {};
}

}  // namespace

class TestSyntheticDevice : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;

 private slots:
  void initTestCase() { QVERIFY2(QFileInfo(cli()).isExecutable(), "KTUNE_CLI must point at the ktune binary"); }

  void devicesShowsIt() {
    const QJsonObject host = cpuDevice(device({})), d = cpuDevice(device(kSmall));
    QVERIFY(!host.isEmpty() && !d.isEmpty());
    QVERIFY(!host["text"].toObject().contains("synthetic"));
    QCOMPARE(d["name"].toString(), host["name"].toString() + " (synthetic)");
    QCOMPARE(d["slug"].toString(), host["slug"].toString() + "-synthetic");
    const QJsonObject p = d["properties"].toObject();
    QCOMPARE(p["l1d_bytes"].toDouble(), 32768.0);
    QCOMPARE(p["l2_bytes"].toDouble(), 262144.0);
    QCOMPARE(p["l3_bytes"].toDouble(), 2097152.0);
    QCOMPARE(p["threads_hw"].toDouble(), 1.0);
    QCOMPARE(p["simd_width_f32"].toDouble(), 4.0);
    QCOMPARE(d["text"].toObject()["synthetic"].toString(), "KTUNE_CPU_DEVICE=" + kSmall);
    QCOMPARE(d["text"].toObject()["micro_kernels"].toString(), QString("portable"));
    const Result text = run({"devices"}, {}, device(kSmall));
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains("synthetic = KTUNE_CPU_DEVICE=" + kSmall), qPrintable(text.out));
  }

  // On a portable device a vec=8 config fails to compile, as on a machine without AVX2, and the
  // run records the device it ran on.
  void theKernelsFollowTheDevice() {
    const QString space = tmp.filePath("space.json");
    writeAll(space, R"({"parameters": {"MR": [4], "NR": [8], "vec": [4, 8], "MC": [16], "KC": [16], "NC": [16],
                        "loop_order": [0], "threads": [1]}, "constraints": []})");
    const Result r = run({"tune", "gemm", "--backend", "cpu", "--shape", "M=8 N=16 K=32", "--space", space,
                          "--warmup-ms", "1", "--max-ms-per-config", "2000", "--run-name", "small", "-q"},
                         tmp.path(), device(kSmall));
    QVERIFY2(r.code <= 1, qPrintable(r.err));
    QMap<int, QJsonObject> by_vec;
    for (const auto& t : measuredTrials(tmp.path(), "tuning_runs/small"))
      by_vec[t.toObject()["config"].toObject()["vec"].toInt()] = t.toObject();
    QCOMPARE(by_vec.size(), 2);
    QCOMPARE(by_vec[4]["status"].toString(), QString("ok"));
    QCOMPARE(by_vec[8]["status"].toString(), QString("compile_error"));
    QVERIFY2(by_vec[8]["error"].toString().contains("vec=8"), qPrintable(by_vec[8]["error"].toString()));
    const QJsonObject md =
        QJsonDocument::fromJson(readAll(tmp.filePath("tuning_runs/small/run_metadata.json"))).object();
    QCOMPARE(md["device"].toObject()["text"].toObject()["synthetic"].toString(), "KTUNE_CPU_DEVICE=" + kSmall);
    QVERIFY(md["device"].toObject()["slug"].toString().endsWith("-synthetic"));
  }

  void malformedIsAClearError() {
    for (const QStringList& cmd : {QStringList{"devices"}, QStringList{"space", "gemm", "--backend", "cpu"}}) {
      const Result r = run(cmd, tmp.path(), device("l1d=32K l2=lots"));
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains("KTUNE_CPU_DEVICE: bad field 'l2=lots'"), qPrintable(r.err));
    }
  }

  // Only downward: one level above what the host runs is refused, naming both.
  void anIsaTheHostLacksIsRefused() {
    const QJsonObject host = cpuDevice(device({}));
    const QJsonObject p = host["properties"].toObject();
    const int lanes = p["simd_width_f32"].toInt();
    if (p["int8_vnni"].toDouble() == 1.0) QSKIP("this host runs every ISA level (the unit test covers the refusal)");
    const QString above = lanes == 16 ? "avx512-vnni" : lanes == 8 ? "avx512" : "avx2";
    const Result r = run({"devices"}, {}, device("isa=" + above));
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("KTUNE_CPU_DEVICE: isa=" + above + " needs instructions this CPU lacks"),
             qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestSyntheticDevice)
#include "test_synthetic_device.moc"
