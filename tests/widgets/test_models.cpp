// Trials model, proxy and charts: batched inserts, sorting, filtering, decimated scatter and the
// selection kept in step between the trials table and the charts.
#include <QComboBox>
#include <QSignalSpy>
#include <QTableView>
#include <QTextBrowser>
#include <QValueAxis>
#include <QtTest>

#include "ktune/error.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

QList<Trial> toList(const std::vector<Trial>& v, std::size_t from, std::size_t to) {
  return QList<Trial>(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to));
}

QStringList paramNames() {
  QStringList names;
  const SearchSpace space = fixture::space();
  for (const Parameter& p : space.parameters()) names << qstr(p.name);
  return names;
}

}  // namespace

class TestModels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initialize(); }

  void appendsInBatches() {
    TrialsModel model;
    const auto all = fixture::trials(1000, fixture::problems(2));
    QSignalSpy inserts(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy columns(&model, &QAbstractItemModel::columnsInserted);
    model.appendTrials(toList(all, 0, 600));
    model.appendTrials(toList(all, 600, 1000));
    QCOMPARE(inserts.count(), 2);
    QCOMPARE(inserts.at(0).at(1).toInt(), 0);
    QCOMPARE(inserts.at(0).at(2).toInt(), 599);
    QCOMPARE(inserts.at(1).at(1).toInt(), 600);
    QCOMPARE(inserts.at(1).at(2).toInt(), 999);
    QCOMPARE(model.rowCount(), 1000);
    // Parameter columns are discovered from the first batch, once each.
    QCOMPARE(columns.count(), 5);
    QCOMPARE(model.parameters(), paramNames());
    QCOMPARE(model.problemKeys().size(), 2);
    QCOMPARE(model.rowForId(all[777].id), 777);
    const int bm = model.parameterColumn(QStringLiteral("BM"));
    QCOMPARE(model.index(5, bm).data().toLongLong(), all[5].config.get("BM"));
    QCOMPARE(model.index(5, TrialsModel::StatusColumn).data().toString(),
             QString::fromLatin1(to_string(all[5].status)));
  }

  void sortsNumericallyWithFailuresLast() {
    TrialsModel model;
    const auto all = fixture::trials(500, fixture::problems(1));
    model.appendTrials(toList(all, 0, all.size()));
    TrialsFilterProxy proxy;
    proxy.setSourceModel(&model);
    const int median = TrialsModel::FirstParamColumn + 5;
    QCOMPARE(model.headerData(median, Qt::Horizontal).toString(), QStringLiteral("Median"));
    proxy.sort(median, Qt::AscendingOrder);
    double last = 0;
    bool seenUnmeasured = false;
    for (int r = 0; r < proxy.rowCount(); ++r) {
      const Trial& t = model.trial(proxy.mapToSource(proxy.index(r, 0)).row());
      if (t.stats.count == 0) {
        seenUnmeasured = true;
        continue;
      }
      QVERIFY2(!seenUnmeasured, "a measured trial sorted after an unmeasured one");
      QVERIFY(t.stats.median_ns >= last);
      last = t.stats.median_ns;
    }
    QVERIFY(seenUnmeasured);
  }

  void filtersByStatusShapeAndText() {
    TrialsModel model;
    const auto shapes = fixture::problems(3);
    const auto all = fixture::trials(900, shapes);
    model.appendTrials(toList(all, 0, all.size()));
    TrialsFilterProxy proxy;
    proxy.setSourceModel(&model);
    const auto count = [&](auto pred) { return static_cast<int>(std::count_if(all.begin(), all.end(), pred)); };

    proxy.setStatuses({TrialStatus::Ok});
    QCOMPARE(proxy.rowCount(), count([](const Trial& t) { return t.status == TrialStatus::Ok; }));
    proxy.setShape(qstr(shapes[1].key()));
    QCOMPARE(proxy.rowCount(),
             count([&](const Trial& t) { return t.status == TrialStatus::Ok && t.problem_key == shapes[1].key(); }));
    proxy.setText(QStringLiteral("bn=64,"));
    const int expected = count([&](const Trial& t) {
      return t.status == TrialStatus::Ok && t.problem_key == shapes[1].key() && t.config.get("BN") == 64;
    });
    QVERIFY(expected > 0);
    QCOMPARE(proxy.rowCount(), expected);
    proxy.setStatuses({});
    proxy.setShape({});
    proxy.setText(QStringLiteral("shared memory"));
    QCOMPARE(proxy.rowCount(), count([](const Trial& t) { return t.status == TrialStatus::LaunchError; }));
    // No status chosen lists everything that ran; pruned configs only on request.
    proxy.setText({});
    const int pruned = count([](const Trial& t) { return t.status == TrialStatus::Pruned; });
    QVERIFY(pruned > 0);
    QCOMPARE(proxy.rowCount(), static_cast<int>(all.size()) - pruned);
    proxy.setStatuses({TrialStatus::Pruned, TrialStatus::Ok});
    QCOMPARE(proxy.rowCount(), pruned + count([](const Trial& t) { return t.status == TrialStatus::Ok; }));
    proxy.setStatuses({});
    // Rows appended while filtered go through the filter too.
    proxy.setText({});
    proxy.setStatuses({TrialStatus::WrongResult});
    const int before = proxy.rowCount();
    Trial extra = all.front();
    extra.id = 100000;
    extra.status = TrialStatus::WrongResult;
    model.appendTrials({extra});
    QCOMPARE(proxy.rowCount(), before + 1);
  }

  void showsStringParametersAsStrings() {
    const SearchSpace space({{"block", {32, 64}, ""},
                             {"order", {"row", "col"}, ""},
                             {"mod", {"", ".cg"}, ""},
                             {"fused", {true, false}, ""}},
                            {});
    TrialsModel model;
    model.reset({QStringLiteral("block"), QStringLiteral("order"), QStringLiteral("mod"), QStringLiteral("fused")});
    model.setPruning(space, {});
    Trial t;
    t.id = 0;
    t.problem_key = "M=1";
    t.config = Config({{"block", 64}, {"order", "col"}, {"mod", ""}, {"fused", true}});
    model.appendTrials({t});
    const auto cell = [&](const char* name) {
      return model.data(model.index(0, model.parameterColumn(QString::fromLatin1(name)))).toString();
    };
    QCOMPARE(cell("block"), QStringLiteral("64"));
    QCOMPARE(cell("order"), QStringLiteral("col"));
    QCOMPARE(cell("mod"), QStringLiteral("\"\""));
    QCOMPARE(cell("fused"), QStringLiteral("true"));
    QCOMPARE(model.configText(t.config), QStringLiteral("block=64,order=col,mod=\"\",fused=true"));
    QVERIFY(model.data(model.index(0, 0), Qt::ToolTipRole).toString().contains(QLatin1String("order=col")));
    TrialsPage page(&model);
    page.detail()->showTrial(&model.trial(0));
    const QString detail = page.detail()->findChild<QTextBrowser*>()->toPlainText();
    QVERIFY2(detail.contains(QLatin1String("\norder\ncol\nmod\n\"\"\nfused\ntrue")), qPrintable(detail));
    // Sorting keeps the candidates' order; the text filter matches what is shown.
    TrialsFilterProxy proxy;
    proxy.setSourceModel(&model);
    proxy.setText(QStringLiteral("order=col"));
    QCOMPARE(proxy.rowCount(), 1);
    proxy.setText(QStringLiteral("order=1"));
    QCOMPARE(proxy.rowCount(), 0);
  }

  void decimatesButKeepsEveryPixel() {
    TrialsModel model;
    const auto all = fixture::trials(20000, fixture::problems(2));
    model.setTrials(paramNames(), all);
    LatencyOrderChart chart(&model);
    chart.resize(800, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.refresh();
    // Every trial that ran: measured ones and failures (in their band); not the pruned.
    const int measured = static_cast<int>(
        std::count_if(all.begin(), all.end(), [](const Trial& t) { return t.status != TrialStatus::Pruned; }));
    QCOMPARE(chart.dataPoints(), measured);
    QVERIFY(chart.drawnPoints() > 0);
    QVERIFY2(chart.drawnPoints() < chart.dataPoints() / 2, "20k points on 800 px should share pixel cells");
    // Zooming in re-decimates from the full data: a narrow window draws its points again.
    const QRectF plot = chart.chart()->plotArea();
    const auto* x = static_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).first());
    // A window 1/50 of the data wide, in the middle of the trials.
    const double pxPerTrial = plot.width() / (x->max() - x->min());
    const double from = plot.left() + (10000 - x->min()) * pxPerTrial;
    chart.zoomTo(QRectF(from, plot.top(), 20000.0 / 50 * pxPerTrial, plot.height()));
    // About 1/50 of the points are in view, and nearly all get their own marker again.
    QTRY_VERIFY2(chart.drawnPoints() > measured / 50 / 2 && chart.drawnPoints() < 2 * measured / 50 + 50,
                 qPrintable(QStringLiteral("%1 of %2 drawn, x %3..%4")
                                .arg(chart.drawnPoints())
                                .arg(measured)
                                .arg(static_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).first())->min())
                                .arg(static_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).first())->max())));
  }

  void chartClickSelectsRowAndRowHighlightsChart() {
    TrialsModel model;
    const auto all = fixture::trials(400, fixture::problems(2));
    model.appendTrials(toList(all, 0, all.size()));
    TrialsPage page(&model);
    LandscapePage landscape(&model);
    connect(&page, &TrialsPage::currentTrialChanged, &landscape, &LandscapePage::setHighlightedTrial);
    connect(&landscape, &LandscapePage::trialClicked, &page, &TrialsPage::selectTrial);
    page.resize(1000, 600);
    landscape.resize(1200, 900);
    page.show();
    landscape.show();
    QVERIFY(QTest::qWaitForWindowExposed(&landscape));
    LatencyOrderChart* chart = landscape.orderChart();
    chart->refresh();

    // Hide the target row behind a filter: selecting from the chart must still reach it.
    const Trial& target =
        *std::find_if(all.begin() + 100, all.end(), [](const Trial& t) { return t.status == TrialStatus::Ok; });
    page.proxy()->setStatuses({TrialStatus::LaunchError});
    QPoint at;
    QVERIFY(chart->viewPositionOf(target.id, &at));
    const qint64 clicked = chart->trialAt(chart->chart()->mapFromScene(chart->mapToScene(at)));
    QVERIFY(clicked >= 0);
    QTest::mouseClick(chart->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(page.currentTrial(), clicked);
    QCOMPARE(page.table()->currentIndex().data(TrialsModel::TrialIdRole).toLongLong(), clicked);
    QCOMPARE(chart->highlightedTrial(), clicked);
    QVERIFY(page.detail()->sampleCount() > 0);

    // Selecting a row in the table highlights that trial in every chart.
    page.proxy()->setStatuses({});
    const int row = model.rowForId(all[321].id);
    page.table()->selectRow(page.proxy()->mapFromSource(model.index(row, 0)).row());
    QCOMPARE(page.currentTrial(), all[321].id);
    QCOMPARE(landscape.orderChart()->highlightedTrial(), all[321].id);
    QCOMPARE(landscape.throughputChart()->highlightedTrial(), all[321].id);
  }

  // grouped_gemm's shapes carry a pass (fwd, dX, dW): a column and a filter of their own, both
  // hidden for families without one.
  void passColumnAndFilter() {
    std::vector<Problem> shapes;
    for (const char* pass : {"dW", "fwd", "dX"}) {
      Problem p;
      p.family = "grouped_gemm";
      p.fields = {{"experts", "8"},        {"tokens", "64"}, {"topk", "2"}, {"hidden", "512"},
                  {"intermediate", "512"}, {"dtype", "f32"}, {"pass", pass}};
      shapes.push_back(p);
    }
    std::vector<Trial> all = fixture::trials(300, fixture::problems(3));
    for (std::size_t i = 0; i < all.size(); ++i) {
      all[i].problem_key = shapes[i % 3].key();
      all[i].status = TrialStatus::Ok;
    }
    TrialsModel model;
    QCOMPARE(TrialsModel::passOf(shapes[0].key()), QString("dW"));
    QCOMPARE(TrialsModel::passOf("M=16,N=512,K=512,dtype=f32"), QString());
    TrialsPage page(&model);
    QVERIFY(page.table()->isColumnHidden(TrialsModel::PassColumn));  // nothing with a pass yet
    model.appendTrials(toList(all, 0, all.size()));
    QCOMPARE(model.passes(), (QStringList{"fwd", "dX", "dW"}));
    QCOMPARE(model.headerData(TrialsModel::PassColumn, Qt::Horizontal).toString(), QString("Pass"));
    QCOMPARE(model.index(1, TrialsModel::PassColumn).data().toString(), QString("fwd"));
    QVERIFY(!page.table()->isColumnHidden(TrialsModel::PassColumn));

    auto* filter = page.findChild<QComboBox*>(QStringLiteral("passFilter"));
    QVERIFY(filter && !filter->isHidden());
    const int dX = filter->findData(QString("dX"));
    QVERIFY2(dX > 0, "the pass filter lists dX");
    filter->setCurrentIndex(dX);
    QCOMPARE(page.proxy()->pass(), QString("dX"));
    QCOMPARE(page.proxy()->rowCount(), 100);
    for (int r = 0; r < page.proxy()->rowCount(); ++r)
      QCOMPARE(page.proxy()->index(r, TrialsModel::PassColumn).data().toString(), QString("dX"));
    // Sorting by the column groups the passes.
    page.proxy()->setPass({});
    page.proxy()->sort(TrialsModel::PassColumn, Qt::AscendingOrder);
    QCOMPARE(page.proxy()->index(0, TrialsModel::PassColumn).data().toString(), QString("dW"));

    // A gemm run hides them again.
    model.setTrials(paramNames(), fixture::trials(30, fixture::problems(2)));
    QVERIFY(page.table()->isColumnHidden(TrialsModel::PassColumn));
    QVERIFY(model.passes().isEmpty());
    QVERIFY(page.proxy()->pass().isEmpty());
    QVERIFY(filter->isHidden());
  }

  void heatmapKeepsTheBestPerCell() {
    TrialsModel model;
    const auto all = fixture::trials(960, fixture::problems(1));
    model.setTrials(paramNames(), all);
    HeatmapView heat(&model);
    heat.setParameters(QStringLiteral("BM"), QStringLiteral("BN"));
    heat.refresh();
    for (qint64 bm : {16, 64}) {
      for (qint64 bn : {32, 128}) {
        const Trial* best = nullptr;
        for (const Trial& t : all)
          if (t.status == TrialStatus::Ok && t.config.get("BM") == bm && t.config.get("BN") == bn &&
              (!best || t.stats.median_ns < best->stats.median_ns))
            best = &t;
        QVERIFY(best);
        QCOMPARE(heat.bestTrialAt(bm, bn), best->id);
      }
    }
  }

  void exportsPngAndSvg() {
    TrialsModel model;
    model.setTrials(paramNames(), fixture::trials(300, fixture::problems(1)));
    LandscapePage landscape(&model);
    landscape.resize(1000, 700);
    landscape.show();
    QVERIFY(QTest::qWaitForWindowExposed(&landscape));
    QTemporaryDir dir;
    const QStringList files = landscape.exportAll(dir.path(), QStringLiteral("t"));
    QCOMPARE(files.size(), 8);
    for (const QString& f : files) {
      QFile file(f);
      QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(f));
      const QByteArray head = file.read(200);
      if (f.endsWith(QLatin1String(".png")))
        QVERIFY(head.startsWith("\x89PNG"));
      else
        QVERIFY(head.contains("<svg") || head.contains("<?xml"));
      QVERIFY(file.size() > 1000);
    }
    QVERIFY_THROWS_EXCEPTION(InputError,
                             landscape.orderChart()->exportTo(dir.filePath(QStringLiteral("missing/x.png"))));
  }
};

QTEST_MAIN(TestModels)
#include "test_models.moc"
