// File → Import → Kernel Tuner cache, and the Landscape page's y-metric combo box: a Kernel Tuner
// cache (finished, or still being written) becomes a run folder the workbench opens, its
// GFLOP/s, energy and power reach the charts, and the scatter charts plot the chosen one.
#include <QAbstractAxis>
#include <QComboBox>
#include <QSignalSpy>
#include <QXYSeries>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <fstream>

#include "ktune/error.h"
#include "ktune/widgets/chart_metric.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

fs::path data(const char* name) { return fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / name; }

// Opens `dir` in `doc` and waits for it.
bool openRun(RunDocument& doc, const fs::path& dir) {
  QSignalSpy opened(&doc, &RunDocument::opened);
  QSignalSpy failed(&doc, &RunDocument::failed);
  doc.open(qstr(dir.string()));
  return QTest::qWaitFor([&] { return !opened.isEmpty() || !failed.isEmpty(); }, 60000) && failed.isEmpty();
}

}  // namespace

class TestKernelTunerImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() { initialize(); }

  void importedCacheOpens() {
    const fs::path dir = RunDocument::importKernelTunerCache(data("kernel_tuner_matmul_cache.json"), sstr(tmp_.path()));
    QVERIFY(fs::exists(dir / "run_metadata.json"));
    QVERIFY2(dir.filename().string().rfind("matmul_kernel_", 0) == 0, dir.c_str());
    RunDocument doc;
    QVERIFY(openRun(doc, dir));
    TrialsModel* model = doc.trials();
    // 240 configs: 194 measured, 24 InvalidConfig (pruned), 18 compile errors, 4 runtime failures.
    int ok = 0, compile = 0, launch = 0;
    for (const Trial& t : model->trials()) {
      ok += t.status == TrialStatus::Ok;
      compile += t.status == TrialStatus::CompileError;
      launch += t.status == TrialStatus::LaunchError;
    }
    QCOMPARE(ok, 194);
    QCOMPARE(compile, 18);
    QCOMPARE(launch, 4);
    QCOMPARE(model->prunedCount(), std::uint64_t(24));
    QCOMPARE(model->metricNames(),
             (QStringList{QStringLiteral("GFLOP/s"), QStringLiteral("energy"), QStringLiteral("power")}));
    QCOMPARE(qstr(doc.metadata()->device.name), QStringLiteral("NVIDIA H100 80GB HBM3"));

    // A second import of the same file within the same second gets its own folder.
    const fs::path again =
        RunDocument::importKernelTunerCache(data("kernel_tuner_matmul_cache.json"), sstr(tmp_.path()));
    QVERIFY(again != dir);
    QVERIFY(fs::exists(again / "trials.csv"));
  }

  void liveCacheImports() {
    // Kernel Tuner still writing: the file ends after an entry and its comma.
    const fs::path dir =
        RunDocument::importKernelTunerCache(data("kernel_tuner_matmul_cache_live.json"), sstr(tmp_.path()));
    RunDocument doc;
    QVERIFY(openRun(doc, dir));
    QVERIFY(doc.trials()->rowCount() > 0);
  }

  void badCacheSaysWhy() {
    const QString bad = tmp_.filePath(QStringLiteral("not_a_cache.json"));
    std::ofstream(sstr(bad)) << "{\"device_name\": \"x\"}";
    try {
      RunDocument::importKernelTunerCache(sstr(bad), sstr(tmp_.path()));
      QFAIL("a file without a cache imported");
    } catch (const InputError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("not_a_cache.json")), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InputError, RunDocument::importKernelTunerCache(
                                             sstr(tmp_.filePath(QStringLiteral("absent.json"))), sstr(tmp_.path())));
  }

  void metricComboPlotsRecordedMetrics() {
    const fs::path dir = RunDocument::importKernelTunerCache(data("kernel_tuner_matmul_cache.json"), sstr(tmp_.path()));
    RunDocument doc;
    LandscapePage page(doc.trials());
    page.resize(1400, 900);
    page.show();
    QComboBox* combo = page.yMetricCombo();
    QCOMPARE(combo->count(), 2);  // latency and × best only, before a run with metrics
    QVERIFY(openRun(doc, dir));
    QCOMPARE(combo->count(), 5);
    QCOMPARE(combo->itemText(2), QStringLiteral("GFLOP/s"));
    QCOMPARE(page.yMetric(), QString());

    const auto& trials = doc.trials()->trials();
    LatencyOrderChart* order = page.orderChart();
    order->refresh();
    // Latency: every measured trial, and the cache's failures in the band above them.
    const QList<QPointF> latency = order->dataValues();
    const auto inBand = [&](const QPointF& p) { return order->inFailureBand(p.y()); };
    QCOMPARE(latency.size(), 216);
    QCOMPARE(std::count_if(latency.begin(), latency.end(), inBand), 22);

    combo->setCurrentIndex(2);
    QCOMPARE(page.yMetric(), QStringLiteral("GFLOP/s"));
    order->refresh();
    QList<QPointF> gflops = order->dataValues();
    gflops.removeIf(inBand);
    std::vector<double> expected;
    for (const Trial& t : trials)
      if (t.stats.count > 0 && t.metrics.count("GFLOP/s")) expected.push_back(t.metrics.at("GFLOP/s"));
    QCOMPARE(gflops.size(), static_cast<qsizetype>(expected.size()));
    QVERIFY(!expected.empty());
    for (qsizetype i = 0; i < gflops.size(); ++i) QCOMPARE(gflops[i].y(), expected[static_cast<std::size_t>(i)]);
    QVERIFY(order->chart()->title().contains(QLatin1String("GFLOP/s")));
    QVERIFY(order->chart()->axes(Qt::Vertical).first()->titleText().contains(QLatin1String("GFLOP/s")));
    // Best so far follows the metric's direction: GFLOP/s only rises, to the best one.
    QList<QPointF> best;
    for (QAbstractSeries* s : order->chart()->series())
      if (s->name() == QLatin1String("search best so far")) best = static_cast<QXYSeries*>(s)->points();
    QVERIFY(best.size() >= 2);
    for (qsizetype i = 1; i < best.size(); ++i) QVERIFY(best[i].y() >= best[i - 1].y());
    QCOMPARE(best.last().y(), *std::max_element(expected.begin(), expected.end()));

    ParameterChart* param = page.parameterChart();
    param->setParameter(QStringLiteral("tile_size_x"));
    param->refresh();
    QList<QPointF> perValue = param->dataValues();
    perValue.removeIf([&](const QPointF& p) { return param->inFailureBand(p.y()); });
    for (const QPointF& p : perValue) QVERIFY(p.y() > 100);  // GFLOP/s, not µs
    QCOMPARE(perValue.size(), static_cast<qsizetype>(expected.size()));

    // The throughput chart takes the cache's own GFLOP/s where ktune knows no FLOP count.
    page.throughputChart()->refresh();
    QCOMPARE(page.throughputChart()->dataPoints(), static_cast<int>(expected.size()));
    QCOMPARE(page.throughputChart()->dataValues().first().y(), expected.front() / 1e3);

    // Energy is better low; back to latency gives the µs again.
    combo->setCurrentIndex(combo->findText(QStringLiteral("energy")));
    order->refresh();
    QVERIFY(!order->dataValues().isEmpty());
    combo->setCurrentIndex(0);
    order->refresh();
    QCOMPARE(order->dataValues(), latency);
  }

  void chartMetricDirection() {
    QVERIFY(ChartMetric(QStringLiteral("GFLOP/s")).higherIsBetter());
    QVERIFY(ChartMetric(QStringLiteral("GFLOPS/W")).higherIsBetter());
    QVERIFY(ChartMetric(QStringLiteral("speedup_vs_torch")).higherIsBetter());  // a worker's metric
    QVERIFY(!ChartMetric(QStringLiteral("torch_us")).higherIsBetter());
    QVERIFY(!ChartMetric(QStringLiteral("energy")).higherIsBetter());
    QVERIFY(!ChartMetric(QStringLiteral("power")).higherIsBetter());
    QVERIFY(!ChartMetric().higherIsBetter());
    Trial t;
    double y = 0;
    QVERIFY(!ChartMetric().valueOf(t, &y));  // no samples, no latency
    QVERIFY(!ChartMetric(QStringLiteral("energy")).valueOf(t, &y));
    t.metrics["energy"] = 3.5;
    QVERIFY(ChartMetric(QStringLiteral("energy")).valueOf(t, &y));
    QCOMPARE(y, 3.5);
    t.metrics["energy"] = std::nan("");
    QVERIFY(!ChartMetric(QStringLiteral("energy")).valueOf(t, &y));
  }
};

QTEST_MAIN(TestKernelTunerImport)
#include "test_kernel_tuner_import.moc"
