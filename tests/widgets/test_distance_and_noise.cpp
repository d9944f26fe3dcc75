// The landscape on real CPU runs: "× best" plots each trial's median over its shape's best (the
// vs_best column of a trials CSV export) on a log axis; each trial's noise is a bar that can be
// switched off and whose hover says what it is; every chart's data leaves as CSV from its Export
// menu, and pictures carry the run and the shape in their titles; legends name shapes by what
// tells them apart (a8w8's q_dtype).
#include <QCheckBox>
#include <QComboBox>
#include <QLegendMarker>
#include <QLogValueAxis>
#include <QSignalSpy>
#include <QtTest>
#include <cmath>
#include <map>

#include "document_fixture.h"
#include "ktune/backends.h"
#include "ktune/csv.h"
#include "ktune/error.h"
#include "ktune/tuner.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

// A CSV export's records, header first.
std::vector<csv::Record> records(const std::string& text) { return csv::parse(text, "export"); }

std::vector<csv::Record> readCsv(const QString& file) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return records(f.readAll().toStdString());
}

int column(const csv::Record& header, const std::string& name) {
  const auto it = std::find(header.fields.begin(), header.fields.end(), name);
  return it == header.fields.end() ? -1 : static_cast<int>(it - header.fields.begin());
}

}  // namespace

class TestDistanceAndNoise : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;
  fs::path gemm_, a8w8_;

  fs::path tune(const std::string& family, const std::string& shape, const std::string& name, std::uint64_t budget) {
    const fs::path dir = fs::path(sstr(tmp_.path())) / name;
    fixture::quick_tune(find_backend(backends_, "cpu"), family, shape, dir, budget, 3);
    return dir;
  }

  // The run opened into a shown landscape page, its charts drawn.
  struct Shown {
    std::unique_ptr<RunDocument> doc;
    std::unique_ptr<LandscapePage> page;
  };
  static Shown show(const fs::path& dir) {
    Shown s{std::make_unique<RunDocument>(), nullptr};
    s.page = std::make_unique<LandscapePage>(s.doc->trials());
    s.page->resize(1400, 900);
    s.page->show();
    if (!fixture::open_into(*s.doc, dir)) return {};
    s.page->orderChart()->refresh();
    s.page->parameterChart()->refresh();
    return s;
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
    gemm_ = tune("gemm", "M=16,64 N=64 K=64", "gemm_run", 16);
    a8w8_ = tune("gemm_a8w8_blockscale", "M=16 N=128 K=128 q_dtype=int8,fp8_e4m3 out_dtype=f32", "a8w8_run", 3);
  }

  // × best is the export's vs_best column, trial by trial, on a log axis of base 2; the user's
  // own axis comes back with latency.
  void vsBestIsTheExportsColumn() {
    Shown s = show(gemm_);
    QVERIFY(s.page);
    auto* log = s.page->findChild<QCheckBox*>(QStringLiteral("logAxis"));
    QVERIFY(log);
    QVERIFY(!log->isChecked());
    QComboBox* y = s.page->yMetricCombo();
    const int vsBest = y->findData(ChartMetric::vsBestName());
    QVERIFY(vsBest > 0);
    y->setCurrentIndex(vsBest);
    QVERIFY(log->isChecked());
    LatencyOrderChart* order = s.page->orderChart();
    QVERIFY(order->logScale());
    order->refresh();
    auto* axis = qobject_cast<QLogValueAxis*>(order->chart()->axes(Qt::Vertical).first());
    QVERIFY(axis);
    QCOMPARE(axis->base(), 2.0);
    QVERIFY(order->yMetric().label().startsWith(QStringLiteral("× best")));

    // The trials CSV export's vs_best, by trial id.
    const std::vector<csv::Record> exported = records(export_trials_csv(gemm_));
    const int idColumn = column(exported.front(), "id"), vsColumn = column(exported.front(), "vs_best");
    QVERIFY(idColumn >= 0 && vsColumn >= 0);
    std::map<std::string, double> expected;
    for (std::size_t i = 1; i < exported.size(); ++i)
      if (!exported[i].fields[static_cast<std::size_t>(vsColumn)].empty())
        expected[exported[i].fields[static_cast<std::size_t>(idColumn)]] =
            std::stod(exported[i].fields[static_cast<std::size_t>(vsColumn)]);
    QVERIFY(expected.size() >= 4);
    // The chart's own data (its CSV): every ok trial at its vs_best, each shape's best at 1.
    const std::vector<csv::Record> plotted = records(order->csv());
    const csv::Record& header = plotted.front();
    const int trial = column(header, "trial"), status = column(header, "status"),
              value = column(header, sstr(order->yMetric().label())), shape = column(header, "shape");
    QVERIFY(trial >= 0 && status >= 0 && value >= 0 && shape >= 0);
    std::map<std::string, double> lowest;
    std::size_t ok = 0;
    for (std::size_t i = 1; i < plotted.size(); ++i) {
      const auto& f = plotted[i].fields;
      if (f[static_cast<std::size_t>(status)] != "ok") continue;
      const double v = std::stod(f[static_cast<std::size_t>(value)]);
      const double want = expected.at(f[static_cast<std::size_t>(trial)]);
      QVERIFY2(std::abs(v - want) <= 1e-9 * want, f[static_cast<std::size_t>(trial)].c_str());
      auto [it, fresh] = lowest.emplace(f[static_cast<std::size_t>(shape)], v);
      if (!fresh) it->second = std::min(it->second, v);
      ++ok;
    }
    QCOMPARE(ok, expected.size());
    QCOMPARE(lowest.size(), std::size_t(2));
    for (const auto& [key, v] : lowest) QCOMPARE(v, 1.0);

    // Back to latency: the log axis as the user left it (off).
    y->setCurrentIndex(0);
    QVERIFY(!log->isChecked());
    QVERIFY(!order->logScale());
    // --y-metric vs_best picks it too.
    s.page->setYMetric(ChartMetric::vsBestName());
    QCOMPARE(s.page->yMetric(), ChartMetric::vsBestName());
  }

  // While a run streams in, a shape's new best moves every point of that shape to its new ratio.
  void vsBestFollowsANewBest() {
    std::vector<Trial> all = RunStore::read_trials(gemm_);
    const std::string shape = all.front().problem_key;
    const auto best = std::min_element(all.begin(), all.end(), [&](const Trial& a, const Trial& b) {
      const auto rank = [&](const Trial& t) {
        return t.status == TrialStatus::Ok && t.problem_key == shape ? t.stats.median_ns : 1e300;
      };
      return rank(a) < rank(b);
    });
    const Trial newBest = *best;
    all.erase(best);
    TrialsModel model;
    QStringList params;
    const RunMetadata meta = RunStore::read_metadata(gemm_);
    for (const Parameter& p : meta.space.parameters()) params << qstr(p.name);
    model.reset(params);
    model.appendTrials(QList<Trial>(all.begin(), all.end()));
    LatencyOrderChart chart(&model);
    chart.setYMetric(ChartMetric(ChartMetric::vsBestName()));
    chart.resize(800, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.refresh();
    const int before = chart.dataPoints();
    model.appendTrials({newBest});  // drawn on the chart's next turn, as a live run's batch is
    QTRY_COMPARE(chart.dataPoints(), before + 1);
    const std::vector<csv::Record> plotted = records(chart.csv());
    const int status = column(plotted.front(), "status"), key = column(plotted.front(), "shape"),
              value = column(plotted.front(), sstr(chart.yMetric().label())), trial = column(plotted.front(), "trial");
    std::size_t checked = 0;
    for (std::size_t i = 1; i < plotted.size(); ++i) {
      const auto& f = plotted[i].fields;
      if (f[static_cast<std::size_t>(status)] != "ok" || f[static_cast<std::size_t>(key)] != shape) continue;
      const Trial& t = model.trial(model.rowForId(std::stoll(f[static_cast<std::size_t>(trial)])));
      const double want = t.stats.median_ns / newBest.stats.median_ns;
      QVERIFY2(std::abs(std::stod(f[static_cast<std::size_t>(value)]) - want) <= 1e-9 * want, f[0].c_str());
      ++checked;
    }
    QVERIFY(checked >= 2);
  }

  // Each ok trial's bar is median ± std within min–max; the hover says so with the sample count;
  // "Noise bars" off takes them away (and from the title).
  void noiseBarsAreToggleable() {
    Shown s = show(gemm_);
    QVERIFY(s.page);
    LatencyOrderChart* order = s.page->orderChart();
    const std::vector<TrialChartView::Spread> spreads = order->drawnSpreads();
    QVERIFY(!spreads.empty());
    const double unit = order->yMetric().timeUnit().ns;
    const TrialsModel* model = s.doc->trials();
    for (const TrialChartView::Spread& b : spreads) {
      const Trial& t = model->trial(model->rowForId(b.trial));
      QVERIFY(t.stats.count >= 2);
      QCOMPARE(b.low, std::max(t.stats.min_ns, t.stats.median_ns - t.stats.std_ns) / unit);
      QCOMPARE(b.high, std::min(t.stats.max_ns, t.stats.median_ns + t.stats.std_ns) / unit);
    }
    const Trial& noisy = model->trial(model->rowForId(spreads.front().trial));
    const QString hover = order->hoverText(noisy);
    QVERIFY2(hover.contains(QStringLiteral("bar: median ± std, within min–max")), qPrintable(hover));
    QVERIFY2(hover.contains(QStringLiteral("of %1 samples").arg(noisy.stats.count)), qPrintable(hover));
    QVERIFY(order->chart()->title().contains(QStringLiteral("bars: median ± std")));

    auto* noise = s.page->findChild<QCheckBox*>(QStringLiteral("noiseBars"));
    QVERIFY(noise && noise->isChecked());
    noise->setChecked(false);
    QVERIFY(order->drawnSpreads().empty());
    QVERIFY(s.page->parameterChart()->drawnSpreads().empty());
    QVERIFY(!order->chart()->title().contains(QStringLiteral("bars")));
    QVERIFY(!order->hoverText(noisy).contains(QStringLiteral("bar:")));
    noise->setChecked(true);
    QVERIFY(!s.page->parameterChart()->drawnSpreads().empty());
  }

  // Every chart's data as CSV (what it plots, every point), and pictures titled with the run and
  // the shape; an unwritable file is named.
  void chartsExportDataAndTitledPictures() {
    Shown s = show(gemm_);
    QVERIFY(s.page);
    QTemporaryDir dir;
    const QString runName = QStringLiteral("gemm_run");
    LatencyOrderChart* order = s.page->orderChart();
    ParameterChart* parameter = s.page->parameterChart();
    ThroughputChart* throughput = s.page->throughputChart();
    HeatmapView* heat = s.page->heatmap();

    order->exportTo(dir.filePath(QStringLiteral("order.csv")));
    std::vector<csv::Record> rows = readCsv(dir.filePath(QStringLiteral("order.csv")));
    QCOMPARE(static_cast<int>(rows.size()) - 1, order->dataPoints());
    QCOMPARE(rows.front().fields.at(3), sstr(QStringLiteral("measured trial #")));
    QVERIFY(column(rows.front(), "bar low (median - std, within min)") > 0);

    parameter->exportTo(dir.filePath(QStringLiteral("parameter.csv")));
    rows = readCsv(dir.filePath(QStringLiteral("parameter.csv")));
    QCOMPARE(static_cast<int>(rows.size()) - 1, parameter->dataPoints());
    const std::string param = sstr(parameter->parameter());
    QCOMPARE(rows.front().fields.at(3), param);
    // The x column holds the parameter's values as the run wrote them, not the axis positions.
    const TrialsModel* model = s.doc->trials();
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const Trial& t = model->trial(model->rowForId(std::stoll(rows[i].fields[0])));
      QCOMPARE(rows[i].fields[3], t.config.value(param).text());
    }

    throughput->refresh();
    throughput->exportTo(dir.filePath(QStringLiteral("throughput.csv")));
    rows = readCsv(dir.filePath(QStringLiteral("throughput.csv")));
    QCOMPARE(static_cast<int>(rows.size()) - 1, throughput->dataPoints());
    QCOMPARE(rows.front().fields.at(4), std::string("TFLOP/s"));

    heat->exportTo(dir.filePath(QStringLiteral("heatmap.csv")));
    rows = readCsv(dir.filePath(QStringLiteral("heatmap.csv")));
    QCOMPARE(rows.size(), heat->xValues().size() * heat->yValues().size() + 1);
    const int crown = column(rows.front(), "crown");
    QVERIFY(crown > 0);
    QCOMPARE(std::count_if(rows.begin() + 1, rows.end(),
                           [&](const csv::Record& r) { return r.fields[static_cast<std::size_t>(crown)] == "winner"; }),
             std::ptrdiff_t(1));

    // Pictures: the run and the shape in the title; the view keeps its short title.
    const QString onScreen = order->chart()->title();
    QVERIFY(!onScreen.contains(runName));
    QVERIFY2(order->exportTitle().contains(QStringLiteral("run %1 · all 2 shapes").arg(runName)),
             qPrintable(order->exportTitle()));
    order->exportTo(dir.filePath(QStringLiteral("order.svg")));
    QCOMPARE(order->chart()->title(), onScreen);
    QFile svg(dir.filePath(QStringLiteral("order.svg")));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QString svgText = QString::fromUtf8(svg.readAll());
    QVERIFY(svgText.contains(QStringLiteral("<title>")) && svgText.contains(runName));
    const QString key = s.doc->trials()->problemKeys().at(1);
    parameter->setShapeFilter(key);
    QVERIFY(parameter->exportTitle().contains(QStringLiteral("run %1 · %2").arg(runName, key)));
    QVERIFY(heat->exportTitle().contains(heat->shape()) && heat->exportTitle().contains(runName));
    heat->exportTo(dir.filePath(QStringLiteral("heatmap.png")));
    QVERIFY(QFile(dir.filePath(QStringLiteral("heatmap.png"))).size() > 1000);

    QVERIFY_THROWS_EXCEPTION(InputError, order->exportTo(dir.filePath(QStringLiteral("missing/x.csv"))));
    QVERIFY_THROWS_EXCEPTION(InputError, heat->exportTo(dir.filePath(QStringLiteral("missing/x.csv"))));
  }

  // a8w8's shapes differ in q_dtype alone: the legend and the shape pickers say int8 and fp8.
  void legendsSayWhatDiffers() {
    Shown s = show(a8w8_);
    QVERIFY(s.page);
    ParameterChart* parameter = s.page->parameterChart();
    QStringList shapes;
    QTRY_VERIFY([&] {
      shapes.clear();
      for (QLegendMarker* m : parameter->chart()->legend()->markers())
        if (m->isVisible() && m->label().startsWith(QStringLiteral("q_dtype="))) shapes << m->label();
      return shapes.size() == 2;
    }());
    shapes.sort();
    QCOMPARE(shapes, (QStringList{QStringLiteral("q_dtype=fp8_e4m3"), QStringLiteral("q_dtype=int8")}));
    QStringList offered;
    for (QComboBox* box : s.page->findChildren<QComboBox*>())
      for (int i = 0; i < box->count(); ++i)
        if (box->itemText(i).startsWith(QStringLiteral("q_dtype="))) offered << box->itemText(i);
    QCOMPARE(offered.size(), 4);  // the page's shape picker and the heatmap's
  }
};

QTEST_MAIN(TestDistanceAndNoise)
#include "test_distance_and_noise.moc"
