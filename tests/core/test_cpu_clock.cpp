// The CPU clock behind peak_gflops_f32: each source parsed from injected text, the choice
// between them bounded and cross-checked, and the detected device consistent with its clock.
#include <QtTest>

#include <sstream>

#include "cpu_clock.h"
#include "cpu_device.h"

using namespace ktune::cpu;

class TestCpuClock : public QObject {
  Q_OBJECT
 private slots:
  void modelNameClock() {
    QCOMPARE(model_name_mhz("Intel(R) Xeon(R) Platinum 8480C @ 2.10GHz"), 2100.0);
    QCOMPARE(model_name_mhz("Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz"), 3400.0);
    QCOMPARE(model_name_mhz("Genuine Intel(R) CPU @ 800MHz"), 800.0);
    QCOMPARE(model_name_mhz("AMD EPYC 7B13 64-Core Processor"), 0.0);
    QCOMPARE(model_name_mhz("AMD EPYC"), 0.0);
    QCOMPARE(model_name_mhz(""), 0.0);
  }

  void parsesProcCpuinfo() {
    // Two sockets, two cores each, SMT: 8 logical CPUs, 4 physical cores.
    std::ostringstream text;
    int cpu = 0;
    for (int socket = 0; socket < 2; ++socket)
      for (int smt = 0; smt < 2; ++smt)
        for (int core = 0; core < 2; ++core, ++cpu)
          text << "processor\t: " << cpu << "\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n"
               << "cpu MHz\t\t: " << (cpu == 0 ? "2000.000" : "3100.5") << "\nphysical id\t: " << socket
               << "\ncore id\t\t: " << core << "\n\n";
    std::istringstream in(text.str());
    const CpuInfo info = parse_cpuinfo(in);
    QCOMPARE(QString::fromStdString(info.model), QString("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"));
    QCOMPARE(info.mhz, 2000.0);  // the first CPU's
    QCOMPARE(info.cores, 4);

    std::istringstream empty("");
    const CpuInfo none = parse_cpuinfo(empty);
    QVERIFY(none.model.empty());
    QCOMPARE(none.mhz, 0.0);
    QCOMPARE(none.cores, 0);
  }

  void cpufreqWinsWhenPlausible() {
    const Clock c = choose_clock({.cpufreq_max_mhz = 4700, .measured_mhz = 4650, .proc_mhz = 800, .model_mhz = 1300});
    QCOMPARE(c.mhz, 4700.0);
    QCOMPARE(QString::fromStdString(c.source), QString("cpufreq maximum"));
  }

  void foldedAddsAreRejected() {
    // The VM: no cpufreq, a Sapphire Rapids core folding adds reads ~19.7 GHz.
    const Clock c = choose_clock({.measured_mhz = 19700, .proc_mhz = 2100, .model_mhz = 2100});
    QCOMPARE(c.mhz, 2100.0);
    QVERIFY2(QString::fromStdString(c.source).contains("measured 19700 MHz rejected"), c.source.c_str());
    // Plausible on its own, but far above the nominal clock: rejected too.
    const Clock high = choose_clock({.measured_mhz = 6000, .proc_mhz = 2000});
    QCOMPARE(high.mhz, 2000.0);
    QVERIFY2(QString::fromStdString(high.source).contains("over 2.5x the nominal 2000 MHz"), high.source.c_str());
  }

  void measuredTurboAboveNominalIsKept() {
    // Inside a VM /proc/cpuinfo reports the nominal clock; a busy core turbos above it.
    const Clock c = choose_clock({.measured_mhz = 3700, .proc_mhz = 2450});
    QCOMPARE(c.mhz, 3700.0);
    QCOMPARE(QString::fromStdString(c.source), QString("measured"));
  }

  void slowMeasurementFallsBackToNominal() {
    // A preempted measurement reads low: the nominal clock is the better upper bound.
    const Clock c = choose_clock({.measured_mhz = 900, .proc_mhz = 2596, .model_mhz = 0});
    QCOMPARE(c.mhz, 2596.0);
    QCOMPARE(QString::fromStdString(c.source), QString("/proc/cpuinfo cpu MHz"));
    // The model name's nominal clock counts when "cpu MHz" is an idle reading.
    const Clock m = choose_clock({.measured_mhz = 0, .proc_mhz = 800, .model_mhz = 2100});
    QCOMPARE(m.mhz, 2100.0);
    QCOMPARE(QString::fromStdString(m.source), QString("/proc/cpuinfo model name"));
  }

  void implausibleSourcesAreBounded() {
    const Clock c = choose_clock({.cpufreq_max_mhz = 0.001, .measured_mhz = 50000, .proc_mhz = 1e6, .model_mhz = 3000});
    QCOMPARE(c.mhz, 3000.0);
    QVERIFY(c.source.find("cpufreq maximum") != std::string::npos);
    QVERIFY(c.source.find("cpu MHz") != std::string::npos);
    const Clock none = choose_clock({.measured_mhz = 1e5});
    QCOMPARE(none.mhz, 0.0);
    QVERIFY(none.source.rfind("unknown", 0) == 0);
    const Clock nothing = choose_clock({});
    QCOMPARE(nothing.mhz, 0.0);
    QCOMPARE(QString::fromStdString(nothing.source), QString("unknown"));
  }

  void detectedPeakFollowsTheChosenClock() {
    // Whatever this machine is: the peak is cores x clock x 2 pipes x lanes x 2 with a clock
    // inside the plausible range, and the device text says where the clock came from.
    const ktune::DeviceInfo d = detect_cpu();
    QVERIFY(!d.text.at("peak_clock_source").empty());
    const double mhz = std::stod(d.text.at("peak_clock_mhz"));
    if (mhz == 0) {
      QVERIFY(!d.properties.count("peak_gflops_f32"));
      return;
    }
    QVERIFY2(mhz >= kMinPlausibleMhz && mhz <= kMaxPlausibleMhz, d.text.at("peak_clock_mhz").c_str());
    const double expected = d.property("cores") * (mhz / 1000) * 4 * d.property("simd_width_f32");
    QVERIFY(qAbs(d.property("peak_gflops_f32") - expected) <= 0.01 * expected);
  }

  void measurementIsPositiveOnX86() {
#if defined(__x86_64__)
    QVERIFY(measure_clock_mhz() > 0);
#else
    QCOMPARE(measure_clock_mhz(), 0.0);
#endif
  }
};

QTEST_GUILESS_MAIN(TestCpuClock)
#include "test_cpu_clock.moc"
