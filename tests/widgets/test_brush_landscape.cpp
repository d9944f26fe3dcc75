// The Analyse page's brush reaches the Landscape page (issue 21), on a real CPU gemm run of two
// shapes: brushing the parallel coordinates draws the brushed trials on every landscape chart as
// they were and dims every other trial, a note above the charts says what is brushed and how to
// clear it, and clearing the brush (the note's button, or the Analyse page's axes) brings every
// chart back as it was, with the Trials page's table and the Analyse page's brushes. One brush,
// the model's TrialBrush, that every page follows.
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QToolButton>
#include <QtTest>
#include <set>

#include "document_fixture.h"
#include "ktune/backends.h"
#include "ktune/tuner.h"
#include "ktune/widgets/analyse_page.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parallel_coordinates.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestBrushLandscape : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> cpu_;
  QTemporaryDir tmp_;
  fs::path run_;

  // The pages of one opened run, shown as the workbench shows them.
  struct Pages {
    std::unique_ptr<RunDocument> doc;
    std::unique_ptr<LandscapePage> landscape;
    std::unique_ptr<AnalysePage> analyse;
    std::unique_ptr<TrialsPage> trials;
    std::vector<TrialChartView*> charts() const {
      return {landscape->orderChart(), landscape->parameterChart(), landscape->throughputChart()};
    }
  };
  Pages open() {
    Pages p{fixture::open_document(run_), nullptr, nullptr, nullptr};
    if (!p.doc) return {};
    p.landscape = std::make_unique<LandscapePage>(p.doc->trials());
    p.analyse = std::make_unique<AnalysePage>(p.doc->trials());
    p.trials = std::make_unique<TrialsPage>(p.doc->trials());
    for (QWidget* w : std::initializer_list<QWidget*>{p.landscape.get(), p.analyse.get(), p.trials.get()}) {
      w->resize(1400, 900);
      w->show();
      if (!QTest::qWaitForWindowExposed(w)) return {};
    }
    for (TrialChartView* c : p.charts()) c->refresh();
    p.landscape->heatmap()->refresh();
    p.analyse->refresh();
    return p;
  }

  // Every point highlighted, none dimmed: what a chart reports without a brush.
  static bool unbrushed(const TrialChartView& chart) {
    const TrialChartView::BrushCounts c = chart.brushCounts();
    return c.dimmed == 0 && c.drawnDimmed == 0 && c.highlighted == chart.dataPoints() &&
           c.drawnHighlighted == chart.drawnPoints();
  }

 private slots:
  void initTestCase() {
    initialize();
    cpu_ = make_cpu_backend();  // a CPU run needs no other backend
    // Every config that runs gets a time: the best N are there.
    run_ = fs::path(sstr(tmp_.path())) / "gemm_run";
    fixture::quick_tune(*cpu_, "gemm", "M=16,64 N=64 K=64", run_, 24, 5, 50, fixture::no_slow_abort);
  }

  void brushDimsTheLandscapeUntilCleared() {
    Pages p = open();
    QVERIFY(p.doc);
    TrialsModel* model = p.doc->trials();
    TrialBrush* brush = model->brush();
    HeatmapView* heatmap = p.landscape->heatmap();
    for (TrialChartView* c : p.charts()) QVERIFY(unbrushed(*c));
    QVERIFY(p.landscape->brushNote()->isHidden());
    QVERIFY(p.landscape->brushNoteText().isEmpty());
    QCOMPARE(heatmap->brushCounts().dimmed, 0);
    // The run-order chart at a size of its own, so that the page laying out its charts again
    // (around the note, or when their size hints change) leaves its picture comparable.
    LatencyOrderChart* order = p.landscape->orderChart();
    order->setFixedSize(order->size());
    order->refresh();
    const QImage before = order->grab().toImage();
    const int listed = p.trials->proxy()->rowCount();

    // The three fastest configs of the Analyse page's shape, brushed on its latency axis.
    ParallelCoordinates* pc = p.analyse->parallelCoordinates();
    QVERIFY(pc->shownTrials().size() >= 6);
    p.analyse->brushFastest(3);
    QVERIFY(brush->active());
    QCOMPARE(brush->shape(), p.analyse->shape());
    const QList<qint64> kept = brush->ids();
    QVERIFY(kept.size() >= 3 && kept.size() < pc->shownTrials().size());
    for (int i = 0; i < 3; ++i) QVERIFY(kept.contains(pc->shownTrials()[i]));

    // Every chart of the landscape (both shapes shown): the brushed trials highlighted, each
    // other trial it plots dimmed, and markers of both drawn.
    for (TrialChartView* c : p.charts()) {
      // The markers are placed again on the next turn of the event loop.
      QTRY_VERIFY(c->brushCounts().drawnDimmed > 0);
      const TrialChartView::BrushCounts counts = c->brushCounts();
      QCOMPARE(counts.highlighted, static_cast<int>(kept.size()));
      QCOMPARE(counts.dimmed, c->dataPoints() - static_cast<int>(kept.size()));
      QVERIFY2(counts.drawnHighlighted > 0 && counts.drawnHighlighted <= kept.size(), qPrintable(c->chart()->title()));
      QCOMPARE(counts.drawnHighlighted + counts.drawnDimmed, c->drawnPoints());
    }
    const QImage during = order->grab().toImage();
    QVERIFY(during != before);
    // The heatmap of the brushed shape: the cells of the brushed configs as they are, the rest
    // washed out.
    QCOMPARE(heatmap->shape(), brush->shape());
    const std::string hx = sstr(heatmap->xParameter()), hy = sstr(heatmap->yParameter());
    std::set<std::pair<ParamValue, ParamValue>> cells;
    for (qint64 id : kept) {
      const Trial& t = model->trial(model->rowForId(id));
      cells.emplace(t.config.value(hx), t.config.value(hy));
    }
    const HeatmapView::BrushCounts heat = heatmap->brushCounts();
    QCOMPARE(heat.highlighted, static_cast<int>(cells.size()));
    QCOMPARE(heat.highlighted + heat.dimmed, static_cast<int>(heatmap->xValues().size() * heatmap->yValues().size()));
    // The note says what is brushed, where, and how to clear it.
    QVERIFY(!p.landscape->brushNote()->isHidden());
    const QString note = p.landscape->brushNoteText();
    QVERIFY2(
        note.contains(QStringLiteral("%1 trials of %2").arg(kept.size()).arg(model->keyLabels().label(brush->shape()))),
        qPrintable(note));
    QVERIFY2(note.contains(QStringLiteral("Analyse page")) && note.contains(QStringLiteral("Clear")), qPrintable(note));
    // The Trials page lists them.
    QVERIFY(p.trials->brushedButton()->isChecked());
    QCOMPARE(p.trials->proxy()->rowCount(), kept.size());

    // Another shape picked on the landscape: the brush keeps none of its trials.
    const QString other = model->problemKeys().at(model->problemKeys().indexOf(brush->shape()) == 0 ? 1 : 0);
    order->setShapeFilter(other);
    order->refresh();
    QCOMPARE(order->brushCounts().highlighted, 0);
    QCOMPARE(order->brushCounts().dimmed, order->dataPoints());
    order->setShapeFilter({});
    order->refresh();

    // The note's Clear brush: every page back as it was.
    auto* clear = p.landscape->findChild<QPushButton*>(QStringLiteral("clearBrush"));
    QVERIFY(clear);
    QVERIFY(clear->isVisible());
    QTest::mouseClick(clear, Qt::LeftButton);
    QVERIFY(!brush->active());
    QVERIFY(!pc->brushing());
    QVERIFY(p.landscape->brushNote()->isHidden());
    QVERIFY(p.trials->brushedButton()->isHidden());
    QCOMPARE(p.trials->proxy()->rowCount(), listed);
    for (TrialChartView* c : p.charts()) QTRY_VERIFY2(unbrushed(*c), qPrintable(c->chart()->title()));
    QCOMPARE(heatmap->brushCounts().dimmed, 0);
    QTRY_VERIFY(order->grab().toImage() == before);  // exactly as it was drawn

    // Cleared on the Analyse page instead (a click on the brushed axis): the same.
    p.analyse->brushFastest(2);
    QTRY_VERIFY(order->brushCounts().drawnDimmed > 0);
    QVERIFY(!p.landscape->brushNote()->isHidden());
    pc->clearBrushes();
    QVERIFY(!brush->active());
    QVERIFY(p.landscape->brushNote()->isHidden());
    for (TrialChartView* c : p.charts()) QTRY_VERIFY2(unbrushed(*c), qPrintable(c->chart()->title()));
    QTRY_VERIFY(order->grab().toImage() == before);  // exactly as it was drawn
  }

  // A brush that keeps nothing (dragged over an empty stretch of an axis) dims every trial and
  // says so.
  void emptyBrushDimsEverything() {
    Pages p = open();
    QVERIFY(p.doc);
    ParallelCoordinates* pc = p.analyse->parallelCoordinates();
    const int latency = static_cast<int>(pc->axisNames().size()) - 1;
    // Between the fastest line and the next: no line crosses it.
    const double a = pc->positionOf(pc->shownTrials()[0], latency), b = pc->positionOf(pc->shownTrials()[1], latency);
    QVERIFY(b > a);
    pc->setBrush(latency, a + (b - a) * 0.25, a + (b - a) * 0.75);
    TrialBrush* brush = p.doc->trials()->brush();
    QVERIFY(brush->active());
    QVERIFY(brush->ids().isEmpty());
    for (TrialChartView* c : p.charts()) {
      QTRY_COMPARE(c->brushCounts().drawnDimmed, c->drawnPoints());
      QCOMPARE(c->brushCounts().dimmed, c->dataPoints());
      QCOMPARE(c->brushCounts().drawnHighlighted, 0);
    }
    QVERIFY2(p.landscape->brushNoteText().contains(QStringLiteral("keeps no trial")),
             qPrintable(p.landscape->brushNoteText()));
    QCOMPARE(p.trials->proxy()->rowCount(), 0);
  }

  // A new run in the model: the old brush named other trials, and goes everywhere.
  void anotherRunClearsTheBrush() {
    Pages p = open();
    QVERIFY(p.doc);
    p.analyse->brushFastest(3);
    QVERIFY(!p.landscape->brushNote()->isHidden());
    p.doc->trials()->reset(p.doc->trials()->parameters());
    QVERIFY(!p.doc->trials()->brush()->active());
    QVERIFY(p.landscape->brushNote()->isHidden());
    QVERIFY(p.trials->brushedButton()->isHidden());
    QTRY_VERIFY(!p.analyse->parallelCoordinates()->brushing());
  }
};

QTEST_MAIN(TestBrushLandscape)
#include "test_brush_landscape.moc"
