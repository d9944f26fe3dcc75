// A GPU run's conditions on the Landscape page: tests/data/h200_grouped_mixtral is a grouped_gemm
// tune of Mixtral's prefill on an H200 at its power cap (bench/cuda/RESULTS.md section 12), whose
// trials carry the SM clock, power and clock limits they were timed under. Plotted against the run
// order, a clock is a reading, not a figure of merit: no "search best so far", no slow_abort bound;
// each winner's star sits at the clock of the number it won by, and the crown says it.
#include <QAbstractAxis>
#include <QComboBox>
#include <QSignalSpy>
#include <QXYSeries>
#include <QtTest>
#include <set>

#include "ktune/conditions.h"
#include "ktune/run_store.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/winner.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

const fs::path kRun = fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / "h200_grouped_mixtral";

QList<QPointF> seriesPoints(const LatencyOrderChart& chart, const QString& name) {
  for (QAbstractSeries* s : chart.chart()->series())
    if (s->name() == name) return static_cast<QXYSeries*>(s)->points();
  return {};
}

}  // namespace

class TestGpuConditions : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initialize(); }

  void theClockIsAReadingNotAnObjective() {
    RunDocument doc;
    LandscapePage page(doc.trials());
    page.resize(1400, 900);
    page.show();
    QSignalSpy opened(&doc, &RunDocument::opened);
    doc.open(qstr(kRun.string()));
    QVERIFY(QTest::qWaitFor([&] { return !opened.isEmpty(); }, 60000));
    QComboBox* combo = page.yMetricCombo();
    for (const char* name : {kSmClockMhz, kPowerW, kClockLimited})
      QVERIFY2(combo->findText(QString::fromLatin1(name)) >= 0, name);

    LatencyOrderChart* order = page.orderChart();
    order->refresh();
    QVERIFY(!seriesPoints(*order, QStringLiteral("search best so far")).isEmpty());  // latency has a best
    QVERIFY(order->statusLegend(TrialStatus::SlowAbort).contains(QStringLiteral("lower bound")));

    combo->setCurrentIndex(combo->findText(QString::fromLatin1(kSmClockMhz)));
    order->refresh();
    QVERIFY(!order->dataValues().isEmpty());
    for (const QPointF& p : order->dataValues()) QVERIFY(p.y() > 1000 && p.y() < 2100);  // MHz, not µs
    QVERIFY(seriesPoints(*order, QStringLiteral("search best so far")).isEmpty());
    QVERIFY(!order->statusLegend(TrialStatus::SlowAbort).contains(QStringLiteral("lower bound")));

    // One star a pass, each at the clock its winner's re-measure ran at: results.json's, which the
    // crown names too.
    const RunResults results = RunStore::read_results(kRun);
    std::multiset<double> clocks;
    for (const ResultEntry& e : results.entries) {
      QVERIFY(e.conditions.count(kSmClockMhz));
      clocks.insert(e.conditions.at(kSmClockMhz));
      QVERIFY(Winner::of(e).numberText().contains(qstr(describe(e.conditions))));
    }
    std::multiset<double> stars;
    for (const QPointF& p : seriesPoints(*order, QStringLiteral("winner (the number it won by)"))) stars.insert(p.y());
    QCOMPARE(stars, clocks);
  }
};

QTEST_MAIN(TestGpuConditions)
#include "test_gpu_conditions.moc"
