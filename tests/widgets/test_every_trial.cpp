// Every trial on the landscape, every kind of parameter (issue 21): failures in a band coloured by
// status, slow_abort as a lower bound, categorical axes for strings and booleans, log2 axes for
// powers of two, round and integer ticks, one time unit per chart, default axes chosen by what
// varied among the measured trials, and a heatmap that shows the winner's number and says why a
// cell is empty. With an imported Kernel Tuner cache (tests/data) and synthetic runs whose trials
// carry every status.
#include <QCategoryAxis>
#include <QComboBox>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <set>

#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/trials_model.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "M=64,N=512,K=512,dtype=f32";

Trial make(std::int64_t id, std::vector<std::pair<std::string, ParamValue>> config, TrialStatus status,
           double median_ns = 0) {
  Trial t;
  t.id = id;
  t.problem_key = kKey;
  t.config = Config(std::move(config));
  t.status = status;
  if (median_ns > 0) {
    t.samples_ns = {median_ns, median_ns * 1.01, median_ns * 0.99};
    t.stats = summarize(t.samples_ns);
  }
  return t;
}

// A microkernel-like space: MR (rows, not powers of two), a string layout and a boolean, where
// MR=6 only ever stopped early and MR=14 only failed or was pruned.
std::vector<Trial> mixedTrials() {
  std::vector<Trial> out;
  std::int64_t id = 0;
  for (int mr : {4, 6, 8, 14})
    for (const char* order : {"row", "col"})
      for (bool vec : {false, true}) {
        std::vector<std::pair<std::string, ParamValue>> c{{"MR", mr}, {"order", order}, {"vec", vec}};
        TrialStatus s = TrialStatus::Ok;
        if (mr == 6) s = TrialStatus::SlowAbort;
        if (mr == 14) s = vec ? TrialStatus::CompileError : TrialStatus::Pruned;
        if (mr == 8 && vec && std::string(order) == "col") s = TrialStatus::Crashed;
        const bool timed = s == TrialStatus::Ok || s == TrialStatus::SlowAbort;
        out.push_back(make(id++, c, s, timed ? 20000.0 * mr * (vec ? 1 : 2) : 0));
      }
  return out;
}

void show(QWidget& w) {
  w.resize(800, 500);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
}

bool openRun(RunDocument& doc, const fs::path& dir) {
  QSignalSpy opened(&doc, &RunDocument::opened);
  QSignalSpy failed(&doc, &RunDocument::failed);
  doc.open(qstr(dir.string()));
  return QTest::qWaitFor([&] { return !opened.isEmpty() || !failed.isEmpty(); }, 60000) && failed.isEmpty();
}

// Whether `label` is a round number: at most two digits after the point.
bool readable(const QString& label) {
  bool ok = false;
  label.toDouble(&ok);
  const auto dot = label.indexOf(QLatin1Char('.'));
  return ok && (dot < 0 || label.size() - dot - 1 <= 2);
}

QSet<QRgb> statusColours() {
  QSet<QRgb> out;
  for (TrialStatus s : kAllTrialStatuses) out.insert(statusColor(s).rgb());
  return out;
}

}  // namespace

class TestEveryTrial : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() { initialize(); }

  // Strings and booleans are categories with their values as labels; failures sit in the band at
  // their value, slow_abort ones among the times.
  void stringsAndBooleansAreCategories() {
    TrialsModel model;
    const auto trials = mixedTrials();
    model.setTrials({"MR", "order", "vec"}, trials);
    ParameterChart chart(&model);
    show(chart);
    chart.setParameter(QStringLiteral("order"));
    chart.refresh();
    QCOMPARE(chart.axisKind(), ParameterAxis::Kind::Categories);
    QCOMPARE(chart.xTickLabels(), (QStringList{"col", "row"}));
    // Every trial that ran: 14 of 16 (2 pruned never ran); 3 failed ones in the band.
    const QList<QPointF> values = chart.dataValues();
    QCOMPARE(values.size(), 14);
    QVERIFY(chart.hasFailureBand());
    QCOMPARE(std::count_if(values.begin(), values.end(), [&](const QPointF& p) { return chart.inFailureBand(p.y()); }),
             3);
    for (const QPointF& p : values) QVERIFY(p.x() == 0 || p.x() == 1);

    chart.setParameter(QStringLiteral("vec"));
    chart.refresh();
    QCOMPARE(chart.xTickLabels(), (QStringList{"false", "true"}));

    // MR (4, 6, 8, 14) is not a power of two: its values, labelled, at their places.
    chart.setParameter(QStringLiteral("MR"));
    chart.refresh();
    QCOMPARE(chart.axisKind(), ParameterAxis::Kind::Linear);
    QCOMPARE(chart.xTickLabels(), (QStringList{"4", "6", "8", "14"}));
  }

  // Powers of two go on a log2 axis labelled with the values; the run order's x ticks are
  // integers and every y tick is a round number, in one unit chosen from the data.
  void powersOfTwoAreLog2AndTicksRead() {
    TrialsModel model;
    const auto all = fixture::trials(3000, fixture::problems(3));
    model.setTrials(QStringList{"BM", "BN", "BK", "unroll", "threads"}, all);
    ParameterChart chart(&model);
    show(chart);
    chart.setParameter(QStringLiteral("threads"));
    chart.refresh();
    QCOMPARE(chart.axisKind(), ParameterAxis::Kind::Log2);
    QCOMPARE(chart.xTickLabels(), (QStringList{"1", "2", "4", "8", "16"}));
    std::set<double> xs;
    for (const QPointF& p : chart.dataValues()) xs.insert(p.x());
    QCOMPARE(xs, (std::set<double>{0, 1, 2, 3, 4}));

    LatencyOrderChart order(&model);
    show(order);
    order.refresh();
    QVERIFY(order.xTickLabels().size() >= 3);
    for (const QString& label : order.xTickLabels()) QVERIFY2(!label.contains(QLatin1Char('.')), qPrintable(label));
    QVERIFY(order.yTickLabels().size() >= 3);
    for (const QString& label : order.yTickLabels()) QVERIFY2(readable(label), qPrintable(label));
    // The fixture's medians are tens to hundreds of µs (M=16..64): µs; at ns they read in ns.
    QVERIFY2(order.yMetric().label().contains(QStringLiteral("(µs)")), qPrintable(order.yMetric().label()));
    const QString axisTitle = order.chart()->axes(Qt::Vertical).first()->titleText();
    QVERIFY2(axisTitle.contains(QStringLiteral("µs")), qPrintable(axisTitle));
    QCOMPARE(timeUnitFor(850).name, QStringLiteral("ns"));
    QCOMPARE(timeUnitFor(12e6).name, QStringLiteral("ms"));
  }

  // Colour means status on both scatter charts; shapes differ by marker on the parameter chart.
  void oneMeaningPerColour() {
    TrialsModel model;
    model.setTrials(QStringList{"BM", "BN", "BK", "unroll", "threads"}, fixture::trials(2000, fixture::problems(3)));
    ParameterChart parameter(&model);
    LatencyOrderChart order(&model);
    show(parameter);
    show(order);
    parameter.setParameter(QStringLiteral("BM"));
    parameter.refresh();
    order.refresh();
    const QSet<QRgb> status = statusColours();
    std::set<int> markers;
    for (TrialChartView* chart : std::initializer_list<TrialChartView*>{&parameter, &order})
      for (const TrialChartView::DrawnGroup& g : chart->drawnGroups()) {
        QColor c = g.color;
        c.setAlpha(255);
        QVERIFY2(status.contains(c.rgb()), qPrintable(g.name));
        if (chart == &parameter) markers.insert(g.marker);
      }
    QCOMPARE(markers.size(), std::size_t{3});  // three shapes, three markers
  }

  // A cell without an ok trial says why; a row whose trials all stopped early stays, as a lower
  // bound; strings and booleans are rows and columns.
  void heatmapSaysWhyACellIsEmpty() {
    TrialsModel model;
    model.setTrials({"MR", "order", "vec"}, mixedTrials());
    HeatmapView heat(&model);
    heat.setParameters(QStringLiteral("vec"), QStringLiteral("MR"));
    heat.setShapeFilter(qstr(kKey));
    heat.resize(480, 360);
    heat.refresh();
    QCOMPARE(heat.yValues(), (std::vector<ParamValue>{4, 6, 8, 14}));
    QCOMPARE(heat.xValues(), (std::vector<ParamValue>{false, true}));
    QVERIFY(heat.cellText(true, 6).startsWith(QStringLiteral("≥ ")));  // slow_abort only: a lower bound
    QCOMPARE(heat.cellText(true, 14), QStringLiteral("failed"));
    QCOMPARE(heat.cellText(false, 14), QStringLiteral("pruned"));
    QCOMPARE(heat.bestTrialAt(true, 14), -1);
    // One unit for the whole map: the times are 80 µs to 1.1 ms, so µs, without a unit per cell.
    QCOMPARE(heat.timeUnit().name, QStringLiteral("µs"));
    QCOMPARE(heat.cellText(false, 4), QStringLiteral("160"));
    QCOMPARE(heat.cellText(true, 8), QStringLiteral("160"));  // row beats the crashed col

    heat.setParameters(QStringLiteral("order"), QStringLiteral("vec"));
    heat.refresh();
    QCOMPARE(heat.xValues(), (std::vector<ParamValue>{"col", "row"}));
    QCOMPARE(heat.cellText("row", true), QStringLiteral("80.0"));

    // A pair of values no trial has: not measured.
    std::vector<Trial> sparse{make(0, {{"a", 1}, {"b", 1}}, TrialStatus::Ok, 1000),
                              make(1, {{"a", 2}, {"b", 2}}, TrialStatus::Ok, 2000)};
    model.setTrials({"a", "b"}, sparse);
    heat.setParameters(QStringLiteral("a"), QStringLiteral("b"));
    heat.refresh();
    QCOMPARE(heat.cellText(1, 2), QStringLiteral("not measured"));
    QCOMPARE(heat.timeUnit().name, QStringLiteral("µs"));
    QCOMPARE(heat.cellText(1, 1), QStringLiteral("1.00"));
  }

  // The winner's cell shows the number it was chosen by, not its search's.
  void heatmapShowsTheWinnersNumber() {
    const fs::path dir = fs::path(sstr(tmp_.path())) / "remeasured";
    const auto results = fixture::write_remeasured_run(dir, 600, 3);
    TrialsModel model;
    model.setTrials({"BM", "BN", "BK", "unroll", "threads"}, RunStore::read_trials(dir));
    const ProblemResult& r = results.front();
    model.addResult(r);
    HeatmapView heat(&model);
    heat.setParameters(QStringLiteral("BN"), QStringLiteral("threads"));
    heat.setShapeFilter(qstr(r.problem.key()));
    heat.refresh();
    QVERIFY(heat.crownIsWinner());
    const Trial& won = model.trial(model.rowForId(r.choice.trial_id));
    const double shown = heat.cellText(won.config.value("BN"), won.config.value("threads")).toDouble();
    const double chosen = r.best->stats.median_ns / heat.timeUnit().ns;
    QVERIFY2(std::abs(shown - chosen) <= chosen * 0.01, qPrintable(QString::number(shown)));
    QVERIFY(std::abs(r.choice.search.median_ns - r.best->stats.median_ns) > r.best->stats.median_ns * 0.02);
  }

  // An imported Kernel Tuner cache: failures in the band, the time unit from its data, and
  // default axes that varied among its measured configs.
  void kernelTunerImport() {
    const fs::path dir = RunDocument::importKernelTunerCache(
        fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / "kernel_tuner_matmul_cache.json", sstr(tmp_.path()));
    RunDocument doc;
    LandscapePage page(doc.trials());
    page.resize(1400, 900);
    page.show();
    QVERIFY(openRun(doc, dir));
    LatencyOrderChart* order = page.orderChart();
    order->refresh();
    QVERIFY(order->hasFailureBand());
    // Kernel Tuner recorded 4.4 to 12.5 ms: the scatter and the heatmap both read ms.
    QCOMPARE(order->yMetric().timeUnit().name, QStringLiteral("ms"));
    QVERIFY(order->yMetric().label().endsWith(QStringLiteral("(ms)")));
    ParameterChart* param = page.parameterChart();
    param->refresh();
    std::set<double> xs;
    for (const QPointF& p : param->dataValues()) xs.insert(p.x());
    QVERIFY2(xs.size() > 1, qPrintable(param->parameter()));
    page.heatmap()->refresh();
    QVERIFY(page.heatmap()->xValues().size() > 1 && page.heatmap()->yValues().size() > 1);
    QCOMPARE(page.heatmap()->timeUnit().name, QStringLiteral("ms"));
  }

  // Default axes follow what varied among the measured trials, not the space's candidate lists.
  void defaultAxesFollowTheMeasuredTrials() {
    TrialsModel model;
    std::vector<Trial> trials;
    // `power` lists five values in the space but every trial ran at one; `tile` took three.
    for (int i = 0; i < 6; ++i)
      trials.push_back(make(i, {{"power", 300}, {"tile", 1 << (i % 3)}, {"warps", 4}}, TrialStatus::Ok, 1000 + i));
    LandscapePage page(&model);
    page.setSpace(
        SearchSpace({{"power", {100, 200, 300, 400, 500}, ""}, {"tile", {1, 2, 4}, ""}, {"warps", {4, 8}, ""}}, {}));
    model.setTrials({"power", "tile", "warps"}, trials);
    QCOMPARE(page.parameterChart()->parameter(), QStringLiteral("tile"));
    QCOMPARE(page.heatmap()->xParameter(), QStringLiteral("tile"));
    QVERIFY(page.heatmap()->yParameter() != QStringLiteral("tile"));
  }
};

QTEST_MAIN(TestEveryTrial)
#include "test_every_trial.moc"
