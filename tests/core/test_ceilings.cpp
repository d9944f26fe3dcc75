// The ceilings of the throughput chart, on fixed synthetic devices: each problem against the peak
// of the precision it computes in (int8 a8w8 under the int8 peak, not f32's), a peak the device
// does not know said with why, the memory roof, and what a chart of a run cannot show (an import
// without GB/s); a CUDA device's by architecture; then the CPU's own: int8 and fp8 peaks from its
// ISA, and its read bandwidth, measured once and kept per device (its number is never asserted:
// it is this host's).
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cpu_bandwidth.h"
#include "cpu_device.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/ceilings.h"
#include "ktune/files.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

// An AVX-512 VNNI server socket as detect_cpu() describes one, with a bandwidth as measured.
DeviceInfo vnni_cpu() {
  DeviceInfo d;
  d.backend = "cpu";
  d.name = "Synthetic VNNI CPU";
  d.properties = {{"cores", 8},
                  {"threads", 16},
                  {"l1d_bytes", 48 * 1024.0},
                  {"l2_bytes", 2 << 20},
                  {"l3_bytes", 32 << 20},
                  {"simd_width_f32", 16},
                  {"int8_vnni", 1},
                  {"peak_gflops_f32", 1000},
                  {"peak_gflops_int8", 4000},
                  {"peak_gflops_fp8_e4m3", 1000},
                  {"mem_bandwidth_gbs", 100},
                  {"max_workspace_bytes", 2.0 * (1 << 30)}};
  return d;
}

Trial ok(const std::string& key, double tflops, double gbps) {
  Trial t;
  t.problem_key = key;
  t.status = TrialStatus::Ok;
  t.tflops = tflops;
  t.gbps = gbps;
  t.stats.count = 3;
  t.stats.median_ns = 1000;
  return t;
}

}  // namespace

class TestCeilings : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void precisionFromTheKey() {
    QCOMPARE(compute_dtype("M=16,N=64,K=64,dtype=f32"), std::string("f32"));
    QCOMPARE(compute_dtype("M=16,N=64,K=512,q_dtype=int8,out_dtype=bf16"), std::string("int8"));
    QCOMPARE(compute_dtype("M=16,N=64,K=512,q_dtype=fp8_e4m3,out_dtype=f32"), std::string("fp8_e4m3"));
    QCOMPARE(compute_dtype("batch=1,out=64,in=64,x_dtype=f16,w_dtype=int8"), std::string("f16"));
    QCOMPARE(compute_dtype("M=1,dtype=float16"), std::string("f16"));
    QCOMPARE(compute_dtype("M=1,dtype=bfloat16,tp=2/out"), std::string("bf16"));
    QCOMPARE(compute_dtype("n=8"), std::string());
    // A field whose name ends like another's is not it.
    QCOMPARE(compute_dtype("out_dtype=bf16,M=1"), std::string());
  }

  void eachPrecisionAgainstItsOwnPeak() {
    const DeviceInfo d = vnni_cpu();
    QCOMPARE(compute_ceiling(d, "M=16,N=64,K=512,q_dtype=int8,out_dtype=f32").value, 4000.0);
    QCOMPARE(compute_ceiling(d, "M=16,N=64,K=512,q_dtype=int8,out_dtype=f32").property,
             std::string("peak_gflops_int8"));
    QCOMPARE(compute_ceiling(d, "M=16,N=64,K=512,q_dtype=fp8_e4m3,out_dtype=f32").value, 1000.0);
    QCOMPARE(compute_ceiling(d, "M=16,N=64,K=64,dtype=f32").value, 1000.0);
    QCOMPARE(compute_ceiling(d, "n=8").value, 1000.0);  // no precision in the key: f32
    // A GPU's bf16 runs at its f16 rate.
    DeviceInfo gpu;
    gpu.name = "GPU";
    gpu.properties = {{"peak_gflops_f16", 989000}, {"peak_gflops_f32", 67000}};
    QCOMPARE(compute_ceiling(gpu, "M=1,dtype=bf16").value, 989000.0);
    QCOMPARE(compute_ceiling(gpu, "M=1,dtype=bf16").property, std::string("peak_gflops_f16"));
  }

  // A CUDA device's peaks from its architecture: an fp8 GEMM on Hopper is charted against the fp8
  // peak (twice f16's), and on an A100, which has no fp8 tensor cores, the chart says so.
  void cudaPeaksByArchitecture() {
    const auto device = [](int major, int minor, double sms, double mhz) {
      const DevicePeaks p = cuda_peaks(major, minor, sms, mhz);
      DeviceInfo d;
      d.backend = "cuda";
      d.name = "sm_" + std::to_string(major) + std::to_string(minor);
      d.properties = p.properties;
      d.text = p.missing;
      return d;
    };
    const DeviceInfo h200 = device(9, 0, 132, 1980);
    QCOMPARE(h200.properties.at("peak_gflops_f16"), 4096 * 132 * 1.98);
    const Ceiling fp8 = compute_ceiling(h200, "M=128,N=24576,K=1536,q_dtype=fp8_e4m3,out_dtype=bf16");
    QCOMPARE(fp8.property, std::string("peak_gflops_fp8_e4m3"));
    QCOMPARE(fp8.value, 2 * 4096 * 132 * 1.98);
    QCOMPARE(compute_ceiling(h200, "q_dtype=int8").value, 2 * 4096 * 132 * 1.98);
    const DeviceInfo a100 = device(8, 0, 108, 1410);
    QCOMPARE(compute_ceiling(a100, "q_dtype=int8").value, 2 * 2048 * 108 * 1.41);
    const Ceiling none = compute_ceiling(a100, "q_dtype=fp8_e4m3");
    QCOMPARE(none.value, 0.0);
    QVERIFY2(none.why_unknown.find("sm_80 has no fp8 tensor cores") != std::string::npos, none.why_unknown.c_str());
    QVERIFY(compute_ceiling(device(8, 9, 128, 2520), "q_dtype=fp8_e5m2").value > 0);  // Ada has fp8
    QVERIFY(compute_ceiling(device(7, 0, 80, 1530), "q_dtype=int8").why_unknown.find("no int8 tensor cores") !=
            std::string::npos);  // V100
    // Every property the backend reports is one the dialect declares (what specs may read).
    const auto& declared = cuda_spec_dialect().device_properties;
    for (const auto& [name, v] : h200.properties) QVERIFY2(declared.count(name) == 1, name.c_str());
  }

  // An AMD device's peaks from its gfx target: MI300X's fp8 and int8 at twice its f16 rate (aiter's
  // block-scaled GEMM is charted against them), MI250X's int8 at its f16 rate and no fp8, said.
  void hipPeaksByTarget() {
    const auto device = [](const std::string& gfx, double cus, double mhz) {
      const DevicePeaks p = hip_peaks(gfx, cus, mhz);
      DeviceInfo d;
      d.backend = "hip";
      d.name = gfx;
      d.properties = p.properties;
      d.text = p.missing;
      return d;
    };
    const DeviceInfo mi300x = device("gfx942:sramecc+:xnack-", 304, 2100);
    QCOMPARE(mi300x.properties.at("peak_gflops_f16"), 2048 * 304 * 2.1);
    QCOMPARE(compute_ceiling(mi300x, "M=16,N=4096,K=4096,q_dtype=fp8_e4m3,out_dtype=bf16").value, 4096 * 304 * 2.1);
    QCOMPARE(compute_ceiling(mi300x, "q_dtype=int8").value, 4096 * 304 * 2.1);
    const DeviceInfo mi250x = device("gfx90a", 220, 1700);
    QCOMPARE(compute_ceiling(mi250x, "q_dtype=int8").value, 1024 * 220 * 1.7);
    const Ceiling none = compute_ceiling(mi250x, "q_dtype=fp8_e4m3");
    QCOMPARE(none.value, 0.0);
    QVERIFY2(none.why_unknown.find("gfx90a has no fp8 matrix cores") != std::string::npos, none.why_unknown.c_str());
    QVERIFY(compute_ceiling(device("gfx1030", 80, 2250), "q_dtype=int8").why_unknown.find("gfx1030 has no int8") !=
            std::string::npos);  // RDNA2
    // A target ktune does not know: f16 and f32 estimated, no 8-bit peak, and why.
    const DeviceInfo unknown = device("gfx1200", 64, 2400);
    QVERIFY(unknown.properties.at("peak_gflops_f16") > 0);
    QVERIFY(compute_ceiling(unknown, "q_dtype=int8").why_unknown.find("not in ktune's table") != std::string::npos);
    const auto& declared = hip_spec_dialect().device_properties;
    for (const auto& [name, v] : mi300x.properties) QVERIFY2(declared.count(name) == 1, name.c_str());
  }

  void anUnknownPeakIsSaidNotReplaced() {
    DeviceInfo d = vnni_cpu();
    d.properties.erase("peak_gflops_int8");
    Ceiling c = compute_ceiling(d, "M=16,N=64,K=512,q_dtype=int8,out_dtype=f32");
    QCOMPARE(c.value, 0.0);
    QVERIFY2(c.why_unknown.find("no int8 peak is known: Synthetic VNNI CPU reports no peak_gflops_int8") == 0,
             c.why_unknown.c_str());
    d.text["no_peak_int8"] = "no VNNI here";
    QCOMPARE(compute_ceiling(d, "q_dtype=int8").why_unknown, std::string("no int8 peak is known: no VNNI here"));
    DeviceInfo recorded;  // an import records the device's name only
    recorded.name = "NVIDIA H100 80GB HBM3";
    c = compute_ceiling(recorded, "x=4096,y=4096");
    QVERIFY2(c.why_unknown.find("recorded without its properties") != std::string::npos, c.why_unknown.c_str());
  }

  void memoryRoof() {
    QCOMPARE(memory_ceiling(vnni_cpu()).value, 100.0);
    DeviceInfo old = vnni_cpu();
    old.properties.erase("mem_bandwidth_gbs");
    const Ceiling c = memory_ceiling(old);
    QCOMPARE(c.value, 0.0);
    QVERIFY2(c.why_unknown.find("predates") != std::string::npos, c.why_unknown.c_str());
    // min(peak, bandwidth x intensity); a memory roof alone where the peak is not known.
    QCOMPARE(roofline_gflops(1000, 100, 2), 200.0);
    QCOMPARE(roofline_gflops(1000, 100, 50), 1000.0);
    QCOMPARE(roofline_gflops(0, 100, 2), 200.0);
    QCOMPARE(roofline_gflops(1000, 0, 2), 1000.0);
  }

  void whatAChartCannotShow() {
    DeviceCeilings cpu(vnni_cpu());
    const std::vector<Trial> measured = {ok("M=16,q_dtype=int8", 0.5, 20), ok("M=16,q_dtype=fp8_e4m3", 0.2, 10)};
    QCOMPARE(cpu.gaps(measured, "", false), std::string());
    QCOMPARE(cpu.gaps(measured, "", true), std::string());
    QCOMPARE(&cpu.compute("M=16,q_dtype=int8"), &cpu.compute("M=16,q_dtype=int8"));  // remembered

    // An import: GFLOP/s recorded, no byte count, a device without properties.
    DeviceInfo h100;
    h100.name = "NVIDIA H100 80GB HBM3";
    DeviceCeilings imported(h100);
    Trial kt = ok("x=4096,y=4096", 0, 0);
    kt.metrics["GFLOP/s"] = 12000;
    std::string gaps = imported.gaps({kt}, "", true);
    QVERIFY2(gaps.find("no trial has GB/s") == 0, gaps.c_str());
    gaps = imported.gaps({kt}, "", false);
    QVERIFY2(gaps.find("no f32 peak is known") == 0, gaps.c_str());
    QVERIFY2(gaps.find("roofline") == std::string::npos, gaps.c_str());  // nothing to draw it from anyway

    // A CPU run from before the bandwidth was measured: no GB/s roof and no roofline, said once.
    DeviceInfo old = vnni_cpu();
    old.properties.erase("mem_bandwidth_gbs");
    DeviceCeilings before(old);
    QVERIFY(before.gaps(measured, "", true).find("no memory bandwidth is known") == 0);
    QVERIFY(before.gaps(measured, "", false).find("no roofline: no memory bandwidth") == 0);
    // The shape shown decides; nothing measured yet lacks nothing.
    QCOMPARE(cpu.gaps(measured, "M=99", true), std::string());
    QCOMPARE(cpu.gaps({}, "", true), std::string());
  }

  // The CPU backend's peaks follow its ISA: int8 with VNNI (4x the f32 rate at its width), none
  // without, said why; fp8 e4m3 at the f32 rate (decoded by the kernels).
  void cpuPeaksByIsa() {
    DeviceInfo host = vnni_cpu();
    host.properties.erase("peak_gflops_int8");
    host.properties.erase("peak_gflops_fp8_e4m3");
    host.text["isa"] = "avx avx2 fma avx512f avx512bw avx512vnni";
    host.properties["peak_gflops_f32"] = 8 * 3.0 * 2 * 16 * 2;
    cpu::CpuOverride same;
    same.spec = "cores=8";
    same.cores = 8;
    DeviceInfo d = cpu::apply_cpu_override(host, cpu::IsaLevel::Avx512Vnni, same);
    QCOMPARE(d.property("peak_gflops_int8"), 4 * d.property("peak_gflops_f32"));
    QCOMPARE(d.property("peak_gflops_fp8_e4m3"), d.property("peak_gflops_f32"));
    cpu::CpuOverride avx2 = same;
    avx2.isa = cpu::IsaLevel::Avx2;
    d = cpu::apply_cpu_override(host, cpu::IsaLevel::Avx512Vnni, avx2);
    QVERIFY(!d.properties.count("peak_gflops_int8"));
    QVERIFY(d.text.at("no_peak_int8").find("VNNI") != std::string::npos);
    QVERIFY(compute_ceiling(d, "q_dtype=int8").why_unknown.find("VNNI") != std::string::npos);
    // AVX-VNNI (256-bit) at the AVX2 level: 4x the 8-lane f32 rate.
    host.text["isa"] += " avxvnni";
    d = cpu::apply_cpu_override(host, cpu::IsaLevel::Avx512Vnni, avx2);
    QCOMPARE(d.property("peak_gflops_int8"), 4 * d.property("peak_gflops_f32"));
  }

  void bandwidthBufferStreamsPastTheCache() {
    DeviceInfo d = vnni_cpu();
    QCOMPARE(cpu::bandwidth_buffer_bytes(d), std::size_t(128) << 20);  // 4 x 32 MiB
    d.properties["l3_bytes"] = 2 << 20;
    QCOMPARE(cpu::bandwidth_buffer_bytes(d), std::size_t(64) << 20);  // at least 64 MiB
    d.properties["l3_bytes"] = 384.0 * (1 << 20);
    QCOMPARE(cpu::bandwidth_buffer_bytes(d), std::size_t(1) << 30);  // at most 1 GiB
    d.properties["max_workspace_bytes"] = 100 << 20;
    QCOMPARE(cpu::bandwidth_buffer_bytes(d), std::size_t(100) << 20);
  }

  void bandwidthMeasuresSomething() {
    const double gbs = cpu::measure_read_bandwidth_gbs(8 << 20, 2, 2);
    QVERIFY(std::isfinite(gbs) && gbs > 0);
  }

  void bandwidthIsMeasuredOncePerDevice() {
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "cache";
    int probes = 0;
    const auto probe = [&] {
      ++probes;
      return 123.5;
    };
    const DeviceInfo d = vnni_cpu();
    cpu::Bandwidth b = cpu::cached_read_bandwidth(d, dir, probe);
    QCOMPARE(b.gbs, 123.5);
    QVERIFY2(b.source.find("measured now") == 0, b.source.c_str());
    b = cpu::cached_read_bandwidth(d, dir, probe);
    QCOMPARE(b.gbs, 123.5);
    QCOMPARE(probes, 1);
    QVERIFY2(b.source.find("kept in") != std::string::npos, b.source.c_str());
    // Another device (fewer cores reading) is measured on its own.
    DeviceInfo fewer = d;
    fewer.properties["cores"] = 2;
    cpu::cached_read_bandwidth(fewer, dir, probe);
    QCOMPARE(probes, 2);
    QCOMPARE(cpu::cached_read_bandwidth(d, dir, probe).gbs, 123.5);
    QCOMPARE(probes, 2);

    // A damaged file is measured again and rewritten; an implausible entry too.
    write_file_atomic(dir / "bandwidth.json", "{not json");
    b = cpu::cached_read_bandwidth(d, dir, probe);
    QCOMPARE(probes, 3);
    QVERIFY2(b.source.find("bandwidth.json") != std::string::npos, b.source.c_str());
    QCOMPARE(cpu::cached_read_bandwidth(d, dir, probe).gbs, 123.5);
    QCOMPARE(probes, 3);
    // A measurement that is no bandwidth is not kept, and says so.
    const auto broken = [] { return std::nan(""); };
    b = cpu::cached_read_bandwidth(d, fs::path(tmp_.path().toStdString()) / "other", broken);
    QCOMPARE(b.gbs, 0.0);
    QVERIFY(!b.source.empty());
    QVERIFY(!fs::exists(fs::path(tmp_.path().toStdString()) / "other" / "bandwidth.json"));
  }

  // This machine's CPU as the backend describes it: what it says, not the numbers (they are the host's).
  void detectedCpuSaysItsCeilings() {
    qputenv("KTUNE_CPU_CACHE", QByteArray::fromStdString((fs::path(tmp_.path().toStdString()) / "host").string()));
    const DeviceInfo d = cpu::detect_cpu();
    QVERIFY(!d.text.at("bandwidth_source").empty());
    QCOMPARE(d.properties.count("mem_bandwidth_gbs") == 1,
             d.text.at("bandwidth_source").find("measured") != std::string::npos);
    QVERIFY(memory_ceiling(d).value > 0 || !memory_ceiling(d).why_unknown.empty());
    if (d.properties.count("peak_gflops_f32")) {
      const Ceiling int8 = compute_ceiling(d, "M=16,N=64,K=512,q_dtype=int8,out_dtype=f32");
      QCOMPARE(int8.value > 0, d.property("int8_vnni") > 0 || d.text.at("isa").find("avxvnni") != std::string::npos);
      QVERIFY(int8.value > 0 || int8.why_unknown.find("VNNI") != std::string::npos);
      QCOMPARE(compute_ceiling(d, "q_dtype=fp8_e4m3").value, d.property("peak_gflops_f32"));
    }
    // Kept: the next process reads it instead of measuring.
    QVERIFY(cpu::detect_cpu().text.at("bandwidth_source").find("kept in") != std::string::npos);
  }
};

QTEST_MAIN(TestCeilings)
#include "test_ceilings.moc"
