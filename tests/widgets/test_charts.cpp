// What the landscape charts show for a multi-shape run: measured trials in their own order, one
// "search best so far" legend entry, a heatmap of one named shape, the device's peak over a roofline
// that never exceeds it, and shapes listed by their key fields as numbers everywhere.
#include <QComboBox>
#include <QLegendMarker>
#include <QTableWidget>
#include <QValueAxis>
#include <QXYSeries>
#include <QtTest>
#include <algorithm>
#include <limits>

#include "ktune/conditions.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

QStringList paramNames() {
  QStringList names;
  const SearchSpace space = fixture::space();
  for (const Parameter& p : space.parameters()) names << qstr(p.name);
  return names;
}

// Shapes M=16, 64, 256 given (and tuned) in the order 256, 16, 64: text order would be
// 16, 256, 64 and first-seen order 256, 16, 64; only numeric order is 16, 64, 256.
std::vector<Problem> shuffledShapes() { return {fixture::problem(256), fixture::problem(16), fixture::problem(64)}; }
QStringList numericKeys() {
  return {qstr(fixture::problem(16).key()), qstr(fixture::problem(64).key()), qstr(fixture::problem(256).key())};
}

// Legend entries shown whose label starts with `prefix`.
int legendEntries(TrialChartView& chart, const QString& prefix) {
  const QList<QLegendMarker*> markers = chart.chart()->legend()->markers();
  return static_cast<int>(std::count_if(markers.begin(), markers.end(), [&](QLegendMarker* m) {
    return m->isVisible() && m->label().startsWith(prefix);
  }));
}

void showAndRefresh(TrialChartView& chart) {
  chart.resize(800, 500);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.refresh();
}

}  // namespace

class TestCharts : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initialize(); }

  // Measured trials are numbered in run order; a failure without a time sits in the band at the
  // place of the next measured trial; pruned configs never ran and are not drawn.
  void runOrderDrawsEveryTrialThatRan() {
    TrialsModel model;
    const auto all = fixture::trials(3000, fixture::problems(3));
    model.setTrials(paramNames(), all);
    const auto measured = [](const Trial& t) { return t.stats.count > 0; };
    QVERIFY(std::any_of(all.begin(), all.end(), [](const Trial& t) { return t.status == TrialStatus::Pruned; }));
    LatencyOrderChart chart(&model);
    showAndRefresh(chart);
    const QList<QPointF> values = chart.dataValues();
    QCOMPARE(values.size(), static_cast<qsizetype>(std::count_if(all.begin(), all.end(), [](const Trial& t) {
               return t.status != TrialStatus::Pruned;
             })));
    QVERIFY(chart.hasFailureBand());
    double next = 0;
    qsizetype at = 0;
    for (const Trial& t : all) {
      if (t.status == TrialStatus::Pruned) continue;
      const QPointF v = values[at++];
      QCOMPARE(v.x(), next);
      if (TrialChartView::failed(t.status))
        QVERIFY(chart.inFailureBand(v.y()));
      else
        QVERIFY(!chart.inFailureBand(v.y()));
      if (measured(t)) ++next;
    }

    // One shape: its own measured trials from 0, as the throughput chart numbers its ok ones.
    const QString shape = model.problemKeys().at(1);
    chart.setShapeFilter(shape);
    chart.refresh();
    ThroughputChart throughput(&model);
    throughput.setShapeFilter(shape);
    showAndRefresh(throughput);
    std::vector<double> okX;
    double n = 0;
    for (const Trial& t : all) {
      if (qstr(t.problem_key) != shape || !measured(t)) continue;
      if (t.status == TrialStatus::Ok) okX.push_back(n);
      ++n;
    }
    QList<QPointF> one = chart.dataValues();
    one.removeIf([&](const QPointF& p) { return chart.inFailureBand(p.y()); });
    QCOMPARE(static_cast<double>(one.size()), n);
    QCOMPARE(one.front().x(), 0.0);
    QCOMPARE(one.back().x(), n - 1);
    const QList<QPointF> ok = throughput.dataValues();
    QCOMPARE(static_cast<std::size_t>(ok.size()), okX.size());
    for (qsizetype i = 0; i < ok.size(); ++i) QCOMPARE(ok[i].x(), okX[static_cast<std::size_t>(i)]);
  }

  void bestSoFarIsOneLegendEntry() {
    TrialsModel model;
    model.setTrials(paramNames(), fixture::trials(1500, fixture::problems(3)));
    LatencyOrderChart chart(&model);
    showAndRefresh(chart);
    // Legend markers read visible only once the scene has laid the legend out.
    QTRY_COMPARE(legendEntries(chart, QStringLiteral("search best so far")), 1);
    int lines = 0;
    for (QAbstractSeries* s : chart.chart()->series()) lines += s->name() == QStringLiteral("search best so far");
    QCOMPARE(lines, 3);  // one line per shape, one legend entry for them all
    // Each shape's line ends at that shape's last measured trial, not the run's.
    double ends = std::numeric_limits<double>::lowest();
    for (QAbstractSeries* s : chart.chart()->series()) {
      auto* line = qobject_cast<QXYSeries*>(s);
      if (!line || !line->name().startsWith(QStringLiteral("search best so far")) || line->count() == 0) continue;
      QVERIFY2(line->points().front().x() > ends, "the shapes' best-so-far lines overlap");
      ends = line->points().back().x();
    }
  }

  void heatmapShowsOneNamedShape() {
    TrialsModel model;
    const auto all = fixture::trials(4000, shuffledShapes());
    model.setTrials(paramNames(), all);
    HeatmapView heat(&model);
    heat.setParameters(QStringLiteral("BM"), QStringLiteral("BN"));
    heat.refresh();
    // No shape chosen: the first in key order, never a minimum over shapes.
    QCOMPARE(heat.shape(), numericKeys().front());
    const auto bestOf = [&](const QString& shape, qint64 bm, qint64 bn) {
      const Trial* best = nullptr;
      for (const Trial& t : all)
        if (qstr(t.problem_key) == shape && t.status == TrialStatus::Ok && t.config.get("BM") == bm &&
            t.config.get("BN") == bn && (!best || t.stats.median_ns < best->stats.median_ns))
          best = &t;
      return best ? best->id : -1;
    };
    for (const QString& shape : numericKeys()) {
      heat.setShapeFilter(shape);
      heat.refresh();
      QCOMPARE(heat.shape(), shape);
      for (qint64 bm : {16, 64, 128})
        for (qint64 bn : {16, 32, 128}) QCOMPARE(heat.bestTrialAt(bm, bn), bestOf(shape, bm, bn));
    }

    // The landscape offers the shape; "all shapes" leaves the heatmap on one, a chosen one moves it.
    LandscapePage page(&model);
    auto* heatShape = page.findChild<QComboBox*>(QStringLiteral("heatmapShape"));
    QVERIFY(heatShape);
    QStringList offered;
    for (int i = 0; i < heatShape->count(); ++i) offered << heatShape->itemData(i).toString();
    QCOMPARE(offered, numericKeys());
    QCOMPARE(heatShape->itemText(0), QStringLiteral("M=16"));  // what tells the shapes apart
    QCOMPARE(page.heatmap()->shape(), numericKeys().front());
    heatShape->setCurrentIndex(2);
    QCOMPARE(page.heatmap()->shape(), numericKeys().at(2));
    QComboBox* pageShape = nullptr;
    for (QComboBox* c : page.findChildren<QComboBox*>())
      if (c->findData(numericKeys().at(1)) >= 0) pageShape = c;
    QVERIFY(pageShape);
    pageShape->setCurrentIndex(pageShape->findData(numericKeys().at(1)));
    QCOMPARE(page.heatmap()->shape(), numericKeys().at(1));
    QCOMPARE(heatShape->currentData().toString(), numericKeys().at(1));
  }

  void peakLineOverARooflineThatNeverExceedsIt() {
    TrialsModel model;
    model.setTrials(paramNames(), fixture::trials(3000, fixture::problems(3)));
    ThroughputChart chart(&model);
    // 0.5 TFLOP/s and 50 GB/s: M=16 (7.5 FLOP/B, 0.38 TFLOP/s) is memory-bound, M=64 and 256 are not.
    chart.setPeaks(500, 0, 50);
    showAndRefresh(chart);
    const QList<QPointF> peak = chart.peakPoints(), roof = chart.roofPoints();
    const QList<QPointF> data = chart.dataValues();
    QVERIFY(!peak.isEmpty());
    for (const QPointF& p : peak) QCOMPARE(p.y(), 0.5);
    QCOMPARE(peak.front().x(), data.front().x());
    QCOMPARE(peak.back().x(), data.back().x());
    QVERIFY(!roof.isEmpty());
    QVERIFY(std::any_of(roof.begin(), roof.end(), [](const QPointF& p) { return p.y() < 0.49; }));
    for (const QPointF& p : roof)
      QVERIFY2(p.y() <= 0.5 + 1e-12, qPrintable(QStringLiteral("roofline at %1 above the peak").arg(p.y())));
    const auto* y = static_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).first());
    QVERIFY(y->max() >= 0.5);
    // The peak is drawn over the roofline, and in the legend.
    const QList<QAbstractSeries*> series = chart.chart()->series();
    qsizetype peakAt = -1, roofAt = -1;
    for (qsizetype i = 0; i < series.size(); ++i) {
      if (series[i]->name().startsWith(QStringLiteral("device peak"))) peakAt = i;
      if (series[i]->name().startsWith(QStringLiteral("roofline"))) roofAt = i;
    }
    QVERIFY(peakAt > roofAt && roofAt >= 0);
    QTRY_COMPARE(legendEntries(chart, QStringLiteral("device peak")), 1);

    // Bandwidth enough that every shape is compute-bound: the roofline is the peak, drawn once.
    chart.setPeaks(500, 0, 5000);
    chart.refresh();
    QVERIFY(!chart.peakPoints().isEmpty());
    QVERIFY(chart.roofPoints().isEmpty());
  }

  // A GPU at its power cap runs below the clock its table peak assumes: where trials recorded the
  // SM clock they ran at, the chart draws the peak at that clock too, over those trials only.
  void peakAtEachTrialsClock() {
    auto all = fixture::trials(600, fixture::problems(3));
    for (std::size_t i = 0; i < all.size(); ++i)
      if (i >= 300) all[i].metrics[kSmClockMhz] = i % 2 ? 1500 : 1800;
    TrialsModel model;
    model.setTrials(paramNames(), all);
    ThroughputChart chart(&model);
    DeviceInfo gpu;
    gpu.backend = "cuda";
    gpu.properties = {{"peak_gflops_f32", 500}, {"sm_clock_mhz", 2000}};
    chart.setDevice(gpu);
    showAndRefresh(chart);
    const QList<QPointF> atClock = chart.clockPeakPoints(), data = chart.dataValues();
    QVERIFY(!atClock.isEmpty());
    // It starts at the first trial that recorded a clock, and holds 0.5 x 1500 / 2000 or 1800 / 2000.
    qsizetype firstWithClock = 0;
    for (const Trial& t : model.trials()) {
      if (t.status != TrialStatus::Ok || t.tflops <= 0) continue;
      if (t.metrics.count(kSmClockMhz)) break;
      ++firstWithClock;
    }
    QCOMPARE(atClock.front().x(), data[firstWithClock].x());
    for (const QPointF& p : atClock)
      QVERIFY2(qFuzzyCompare(p.y(), 0.375) || qFuzzyCompare(p.y(), 0.45), qPrintable(QString::number(p.y())));
    QTRY_COMPARE(legendEntries(chart, QStringLiteral("peak at the trial's SM clock")), 1);
    // No clock recorded (a CPU run): no line, and none in the legend.
    for (Trial& t : all) t.metrics.erase(kSmClockMhz);
    model.setTrials(paramNames(), all);
    chart.refresh();
    QVERIFY(chart.clockPeakPoints().isEmpty());
    QTRY_COMPARE(legendEntries(chart, QStringLiteral("peak at the trial's SM clock")), 0);
  }

  void shapesListInNumericKeyOrder() {
    const auto all = fixture::trials(900, shuffledShapes());
    TrialsModel loaded;
    loaded.setTrials(paramNames(), all);
    QCOMPARE(loaded.problemKeys(), numericKeys());
    TrialsModel streamed;  // the live path: keys arrive one batch at a time
    for (std::size_t i = 0; i < all.size(); i += 100)
      streamed.appendTrials(QList<Trial>(all.begin() + static_cast<long>(i),
                                         all.begin() + static_cast<long>(std::min(all.size(), i + 100))));
    QCOMPARE(streamed.problemKeys(), numericKeys());

    TrialsFilterProxy proxy;
    proxy.setSourceModel(&loaded);
    proxy.sort(TrialsModel::ShapeColumn, Qt::AscendingOrder);
    QStringList sorted;
    for (int r = 0; r < proxy.rowCount(); ++r) {
      const QString key = proxy.index(r, TrialsModel::ShapeColumn).data(TrialsModel::ProblemKeyRole).toString();
      if (sorted.isEmpty() || sorted.back() != key) sorted << key;
    }
    QCOMPARE(sorted, numericKeys());

    RunPage run(&loaded);
    QTableWidget* best = run.winnerTable();
    QStringList rows;
    // Each row shows what tells its shape apart; its tooltip starts with the whole key.
    for (int r = 0; r < best->rowCount(); ++r) rows << best->item(r, 0)->toolTip().section(QLatin1Char('\n'), 0, 0);
    QCOMPARE(rows, numericKeys());

    LandscapePage landscape(&loaded);
    QComboBox* shapes = nullptr;
    for (QComboBox* c : landscape.findChildren<QComboBox*>())
      if (c->findData(QString()) == 0 && c->count() == 4) shapes = c;
    QVERIFY(shapes);
    QCOMPARE(
        (QStringList{shapes->itemData(1).toString(), shapes->itemData(2).toString(), shapes->itemData(3).toString()}),
        numericKeys());
  }
};

QTEST_MAIN(TestCharts)
#include "test_charts.moc"
