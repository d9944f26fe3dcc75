// KTUNE_CPU_DEVICE, the synthetic CPU device: its parser, its errors, and the override applied
// to a fixed host (exact numbers), then detection in this process, whatever the variable says.
#include <QtTest>

#include "cpu_device.h"
#include "ktune/error.h"

using namespace ktune;
using namespace ktune::cpu;

namespace {

constexpr double KiB = 1024, MiB = 1024 * KiB;

// A Sapphire Rapids socket as detect_cpu() describes one.
DeviceInfo sapphire_rapids() {
  DeviceInfo d;
  d.backend = "cpu";
  d.name = "Intel(R) Xeon(R) Platinum 8480C";
  d.properties = {{"cores", 56},
                  {"threads", 112},
                  {"threads_hw", 112},
                  {"l1d_bytes", 48 * KiB},
                  {"l2_bytes", 2 * MiB},
                  {"l3_bytes", 105 * MiB},
                  {"simd_width_f32", 16},
                  {"simd_registers", 32},
                  {"int8_vnni", 1},
                  {"peak_gflops_f32", 56 * 3.8 * 4 * 16},
                  {"max_workspace_bytes", 1e9}};
  d.text = {{"isa", "sse4.2 avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512vnni"},
            {"micro_kernels", "avx512 avx2 portable"},
            {"cache_info", "sysfs"}};
  return d;
}

// The message of the InputError that `f` throws ("" when it throws none).
template <class F>
QString error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestCpuDevice : public QObject {
  Q_OBJECT
 private slots:
  void parsesEveryField() {
    const CpuOverride o = parse_cpu_override("  l1d=32K l2=256k l3=2M cores=1 threads=2 isa=portable ");
    QCOMPARE(*o.l1d, 32 * KiB);
    QCOMPARE(*o.l2, 256 * KiB);
    QCOMPARE(*o.l3, 2 * MiB);
    QCOMPARE(*o.cores, 1);
    QCOMPARE(*o.threads, 2);
    QVERIFY(*o.isa == IsaLevel::Portable);
    QCOMPARE(QString::fromStdString(o.spec), QString("l1d=32K l2=256k l3=2M cores=1 threads=2 isa=portable"));
    // Plain bytes and G; fields left out stay unset.
    const CpuOverride p = parse_cpu_override("l2=1048576 l3=1G isa=avx512-vnni");
    QCOMPARE(*p.l2, MiB);
    QCOMPARE(*p.l3, 1024 * MiB);
    QVERIFY(*p.isa == IsaLevel::Avx512Vnni);
    QVERIFY(!p.l1d && !p.cores && !p.threads);
    QVERIFY(!parse_cpu_override("").isa);
  }

  void malformedFieldsAreNamed_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("field");
    QTest::newRow("unit") << "l1d=32X"
                          << "l1d=32X";
    QTest::newRow("empty value") << "l2= l3=2M"
                                 << "l2=";
    QTest::newRow("fraction") << "threads=1.5"
                              << "threads=1.5";
    QTest::newRow("unit on a count") << "cores=2K"
                                     << "cores=2K";
    QTest::newRow("negative") << "cores=-1"
                              << "cores=-1";
    QTest::newRow("zero cores") << "isa=avx2 cores=0"
                                << "cores=0";
    QTest::newRow("too many threads") << "threads=5000"
                                      << "threads=5000";
    QTest::newRow("cache below 1K") << "l1d=512"
                                    << "l1d=512";
    QTest::newRow("too many digits") << "l3=99999999999999"
                                     << "l3=99999999999999";
    QTest::newRow("isa") << "isa=sse2"
                         << "isa=sse2";
    QTest::newRow("unknown field") << "l4=64M"
                                   << "l4=64M";
    QTest::newRow("no value") << "portable"
                              << "portable";
    QTest::newRow("given twice") << "l1d=32K l1d=48K"
                                 << "l1d=48K";
    QTest::newRow("comma") << "l1d=32K,l2=1M"
                           << "l1d=32K,l2=1M";
  }
  void malformedFieldsAreNamed() {
    QFETCH(QString, spec);
    QFETCH(QString, field);
    const QString err = error_of([&] { parse_cpu_override(spec.toStdString()); });
    QVERIFY2(err.startsWith("KTUNE_CPU_DEVICE: bad field '" + field + "'"), qPrintable(err));
  }

  // A small machine on a large one: every number follows, exactly.
  void overrideOnAFixedHost() {
    const DeviceInfo d = apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni,
                                            parse_cpu_override("l1d=32K l2=256K l3=2M cores=1 threads=1 isa=portable"));
    QCOMPARE(d.property("l1d_bytes"), 32 * KiB);
    QCOMPARE(d.property("l2_bytes"), 256 * KiB);
    QCOMPARE(d.property("l3_bytes"), 2 * MiB);
    QCOMPARE(d.property("cores"), 1.0);
    QCOMPARE(d.property("threads"), 1.0);
    QCOMPARE(d.property("threads_hw"), 1.0);
    QCOMPARE(d.property("simd_width_f32"), 4.0);
    QCOMPARE(d.property("simd_registers"), 16.0);
    QCOMPARE(d.property("int8_vnni"), 0.0);
    QCOMPARE(d.property("peak_gflops_f32"), 3.8 * 4 * 4);  // one core, 4 lanes, the host's clock
    QCOMPARE(d.property("max_workspace_bytes"), 1e9);
    QCOMPARE(QString::fromStdString(d.text.at("isa")), QString("sse4.2"));
    QCOMPARE(QString::fromStdString(d.text.at("micro_kernels")), QString("portable"));
    QCOMPARE(QString::fromStdString(d.text.at("cache_info")), QString("KTUNE_CPU_DEVICE"));
    QCOMPARE(QString::fromStdString(d.text.at("synthetic")),
             QString("KTUNE_CPU_DEVICE=l1d=32K l2=256K l3=2M cores=1 threads=1 isa=portable"));
    // Its own registry file: a synthetic device's winners are not the host's.
    QCOMPARE(QString::fromStdString(d.name), QString("Intel(R) Xeon(R) Platinum 8480C (synthetic)"));
    QVERIFY(d.slug() != sapphire_rapids().slug());
  }

  void fieldsLeftOutAreTheHosts() {
    const DeviceInfo avx2 = apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni, parse_cpu_override("isa=avx2"));
    QCOMPARE(avx2.property("simd_width_f32"), 8.0);
    QCOMPARE(avx2.property("simd_registers"), 16.0);
    QCOMPARE(avx2.property("int8_vnni"), 0.0);
    QCOMPARE(avx2.property("cores"), 56.0);
    QCOMPARE(avx2.property("threads_hw"), 112.0);
    QCOMPARE(avx2.property("l3_bytes"), 105 * MiB);
    QCOMPARE(QString::fromStdString(avx2.text.at("isa")), QString("sse4.2 avx avx2 fma"));
    QCOMPARE(QString::fromStdString(avx2.text.at("micro_kernels")), QString("avx2 portable"));
    QCOMPARE(QString::fromStdString(avx2.text.at("cache_info")), QString("sysfs"));
    QCOMPARE(avx2.property("peak_gflops_f32"), 56 * 3.8 * 4 * 8);
    // AVX-512 without VNNI keeps the 16 lanes and drops vpdpbusd.
    const DeviceInfo no_vnni =
        apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni, parse_cpu_override("isa=avx512"));
    QCOMPARE(no_vnni.property("simd_width_f32"), 16.0);
    QCOMPARE(no_vnni.property("int8_vnni"), 0.0);
    QCOMPARE(QString::fromStdString(no_vnni.text.at("isa")),
             QString("sse4.2 avx avx2 fma avx512f avx512bw avx512dq avx512vl"));
    // threads defaults to cores; cores to the host's, at most threads.
    const DeviceInfo four = apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni, parse_cpu_override("cores=4"));
    QCOMPARE(four.property("threads_hw"), 4.0);
    QCOMPARE(four.property("peak_gflops_f32"), 4 * 3.8 * 4 * 16);
    const DeviceInfo eight =
        apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni, parse_cpu_override("threads=8"));
    QCOMPARE(eight.property("cores"), 8.0);
    QCOMPARE(eight.property("threads"), 8.0);
  }

  // Only downward: the kernels of an ISA the host lacks cannot run.
  void isaAboveTheHostIsRefused() {
    const DeviceInfo host = sapphire_rapids();
    const QString err = error_of([&] { apply_cpu_override(host, IsaLevel::Avx2, parse_cpu_override("isa=avx512")); });
    QVERIFY2(err.contains("KTUNE_CPU_DEVICE: isa=avx512") && err.contains("up to avx2"), qPrintable(err));
    QVERIFY(allowed_isa_level(IsaLevel::Avx2, parse_cpu_override("isa=portable")) == IsaLevel::Portable);
    QVERIFY(allowed_isa_level(IsaLevel::Avx512, parse_cpu_override("l2=1M")) == IsaLevel::Avx512);
    QVERIFY(allowed_isa_level(IsaLevel::Avx512, std::nullopt) == IsaLevel::Avx512);
    QVERIFY(!error_of([] { allowed_isa_level(IsaLevel::Avx512, parse_cpu_override("isa=avx512-vnni")); }).isEmpty());
  }

  void impossibleMachinesAreRefused_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("message");
    QTest::newRow("l2 not above l1d") << "l1d=64K l2=64K"
                                      << "l2=64K must exceed l1d=64K";
    QTest::newRow("against the host's l3") << "l2=256M"
                                           << "l3=105M (the host's) must be at least l2=256M";
    QTest::newRow("threads below cores") << "cores=8 threads=4"
                                         << "threads=4 must be at least cores=8";
  }
  void impossibleMachinesAreRefused() {
    QFETCH(QString, spec);
    QFETCH(QString, message);
    const QString err = error_of(
        [&] { apply_cpu_override(sapphire_rapids(), IsaLevel::Avx512Vnni, parse_cpu_override(spec.toStdString())); });
    QVERIFY2(err.startsWith("KTUNE_CPU_DEVICE: ") && err.contains(message), qPrintable(err));
  }

  // This process's device and kernels, with or without the variable (CI runs this suite under
  // synthetic devices too): the device says what the variable says, and the micro-kernels
  // handed out are exactly those of the device's SIMD width.
  void detectionFollowsTheVariable() {
    const DeviceInfo d = detect_cpu();
    const auto o = cpu_override_from_env();
    QCOMPARE(d.text.count("synthetic") == 1, o.has_value());
    QCOMPARE(QString::fromStdString(d.name).endsWith(" (synthetic)"), o.has_value());
    if (o) {
      if (o->l1d) QCOMPARE(d.property("l1d_bytes"), *o->l1d);
      if (o->l2) QCOMPARE(d.property("l2_bytes"), *o->l2);
      if (o->l3) QCOMPARE(d.property("l3_bytes"), *o->l3);
      if (o->threads) QCOMPARE(d.property("threads_hw"), double(*o->threads));
      if (o->cores) QCOMPARE(d.property("cores"), double(*o->cores));
      if (o->isa) QVERIFY(isa_level() == *o->isa);
    }
    const int lanes = static_cast<int>(d.property("simd_width_f32"));
    QVERIFY(lanes == 4 || lanes == 8 || lanes == 16);
    QCOMPARE(lanes, isa_level() >= IsaLevel::Avx512 ? 16 : isa_level() == IsaLevel::Avx2 ? 8 : 4);
    for (int l : {4, 8, 16}) QCOMPARE(ukernels_for(l) != nullptr, l <= lanes);
    QCOMPARE(d.property("int8_vnni") == 1.0, isa_level() == IsaLevel::Avx512Vnni);
    QVERIFY(isa_level() <= host_isa_level());
  }
};

QTEST_APPLESS_MAIN(TestCpuDevice)
#include "test_cpu_device.moc"
