// Ceilings that are right on the throughput chart: a real CPU gemm_a8w8_blockscale run (int8 and
// fp8 e4m3 shapes) drawn against fixed synthetic devices, so nothing depends on this host: int8
// trials under the int8 peak and fp8 ones under the f32 peak they are computed at; a device
// without an int8 peak draws none for int8 and says why on the chart; the memory roof from the
// device's bandwidth; an imported Kernel Tuner cache's GB/s chart says why it is empty.
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>

#include "ktune/backends/cpu.h"
#include "ktune/ceilings.h"
#include "ktune/tuner.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

// A CPU with AVX-512 VNNI: f32 1 TFLOP/s, int8 4 TOP/s, fp8 (decoded to f32) 1 TFLOP/s, 40 GB/s.
DeviceInfo vnniCpu() {
  DeviceInfo d;
  d.backend = "cpu";
  d.name = "Synthetic VNNI CPU";
  d.properties = {
      {"peak_gflops_f32", 1000}, {"peak_gflops_int8", 4000}, {"peak_gflops_fp8_e4m3", 1000}, {"mem_bandwidth_gbs", 40}};
  return d;
}

void showAndRefresh(ThroughputChart& chart) {
  chart.resize(900, 500);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.refresh();
}

// The peak line's height at each point of the trials of one precision (TFLOP/s: the points are
// the ok trials with a FLOP count, in model order).
QList<double> peaksOver(const ThroughputChart& chart, const TrialsModel& model, const std::string& dtype) {
  QList<double> heights;
  const QList<QPointF> peak = chart.peakPoints(), data = chart.dataValues();
  qsizetype i = 0;
  for (const Trial& t : model.trials()) {
    if (t.status != TrialStatus::Ok || t.tflops <= 0) continue;
    const double x = data[i++].x();
    if (compute_dtype(t.problem_key) != dtype) continue;
    double h = -1;  // the step line at x: its last point at or before it
    for (const QPointF& p : peak)
      if (p.x() <= x) h = p.y();
    heights << h;
  }
  return heights;
}

}  // namespace

class TestThroughputCeilings : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::vector<std::unique_ptr<Backend>> backends_;
  fs::path a8w8_;

 private slots:
  void initTestCase() {
    initialize();
    backends_.push_back(make_cpu_backend());
    a8w8_ = fs::path(sstr(tmp_.path())) / "a8w8";
    fixture::quick_tune(*backends_.front(), "gemm_a8w8_blockscale",
                        "M=16 N=128 K=128 q_dtype=int8,fp8_e4m3 out_dtype=f32", a8w8_, 4, 1, 50,
                        fixture::no_slow_abort);
  }

  void eachPrecisionUnderItsOwnPeak() {
    TrialsModel model;
    const LoadedRun run = RunDocument::load(a8w8_);
    QStringList params;
    for (const Parameter& p : run.metadata.space.parameters()) params << qstr(p.name);
    model.setTrials(params, run.trials);
    ThroughputChart chart(&model);
    chart.setDevice(vnniCpu());
    showAndRefresh(chart);
    const QList<double> int8 = peaksOver(chart, model, "int8"), fp8 = peaksOver(chart, model, "fp8_e4m3");
    QVERIFY2(!int8.isEmpty() && !fp8.isEmpty(), "the run measured both precisions");
    for (double h : int8) QCOMPARE(h, 4.0);  // TOP/s, not the f32 peak
    for (double h : fp8) QCOMPARE(h, 1.0);
    QCOMPARE(chart.gaps(), QString());

    // A CPU without VNNI: no int8 peak is drawn, and the chart says why.
    DeviceInfo plain = vnniCpu();
    plain.properties.erase("peak_gflops_int8");
    plain.text["no_peak_int8"] = "no int8 dot-product instructions (AVX-512 VNNI or AVX-VNNI)";
    chart.setDevice(plain);
    chart.refresh();
    for (double h : peaksOver(chart, model, "int8")) QCOMPARE(h, 0.0);  // under no other precision's peak
    for (double h : peaksOver(chart, model, "fp8_e4m3")) QCOMPARE(h, 1.0);
    QVERIFY2(chart.gaps().contains(QLatin1String("no int8 peak is known: no int8 dot-product")),
             qPrintable(chart.gaps()));

    // The memory roof: GB/s against the device's bandwidth.
    chart.setDevice(vnniCpu());
    chart.setMetric(ThroughputChart::Metric::Gbps);
    chart.refresh();
    QVERIFY(!chart.peakPoints().isEmpty());
    for (const QPointF& p : chart.peakPoints()) QCOMPARE(p.y(), 40.0);
    // A run recorded before ktune measured the CPU's bandwidth has no memory roof, and says so.
    DeviceInfo before = vnniCpu();
    before.properties.erase("mem_bandwidth_gbs");
    chart.setDevice(before);
    chart.refresh();
    QVERIFY(chart.peakPoints().isEmpty());
    QVERIFY2(chart.gaps().contains(QLatin1String("no memory bandwidth is known")), qPrintable(chart.gaps()));
  }

  void importedCacheSaysWhyItHasNoBytes() {
    const fs::path dir = RunDocument::importKernelTunerCache(
        fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / "kernel_tuner_matmul_cache.json", sstr(tmp_.path()));
    const LoadedRun run = RunDocument::load(dir);
    QStringList params;
    for (const Parameter& p : run.metadata.space.parameters()) params << qstr(p.name);
    TrialsModel model;
    model.setTrials(params, run.trials);
    ThroughputChart chart(&model);
    chart.setDevice(run.metadata.device);
    chart.setMetric(ThroughputChart::Metric::Gbps);
    showAndRefresh(chart);
    QCOMPARE(chart.dataPoints(), 0);
    QVERIFY2(chart.gaps().startsWith(QLatin1String("no trial has GB/s")), qPrintable(chart.gaps()));
    // TFLOP/s from the cache's own GFLOP/s, with no peak the recorded device could give.
    chart.setMetric(ThroughputChart::Metric::Tflops);
    chart.refresh();
    QVERIFY(chart.dataPoints() > 0);
    QVERIFY2(chart.gaps().contains(QLatin1String("no f32 peak is known")), qPrintable(chart.gaps()));
  }
};

QTEST_MAIN(TestThroughputCeilings)
#include "test_throughput_ceilings.moc"
