// One winner on every page: the Run page, the Trials page, the landscape and the Apply page show
// the winner the core decided (the re-measure's, not the search's fastest trial) with the number it
// was chosen by and the search's number labelled beside it, flag a doubtful one, and the charts
// draw each trial's noise. Runs come from the core (a lucky backend whose fastest search config is
// slow when timed again) or are written through RunStore with such winners.
#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <cmath>

#include "../core/lucky_backend.h"
#include "ktune/registry.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;
using Tester = QAbstractItemModelTester;

namespace {

struct Events : TuneObserver {
  QList<Trial> trials;
  std::vector<ProblemResult> results;
  void on_event(const TuneEvent& e) override {
    if (const auto* t = std::get_if<event::TrialFinished>(&e)) trials.append(t->trial);
    if (const auto* p = std::get_if<event::ProblemFinished>(&e)) results.push_back(p->result);
  }
};

QString cell(const RunPage& page, int column) { return page.winnerTable()->item(0, column)->text(); }

const Trial& trialWithId(const TrialsModel& model, std::int64_t id) { return model.trial(model.rowForId(id)); }

}  // namespace

class TestOneWinner : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> tmp_;
  fs::path root() const { return fs::path(sstr(tmp_->path())); }

  // LuckyBackend's configs `xs`, the best 3 re-measured: x=1 is the fastest in the search (90 ns)
  // and takes 120 ns when timed again.
  Events tuneLucky(std::vector<ParamValue> xs, const std::string& name) {
    test::LuckyBackend b;
    const TuneRequest req = test::lucky_request(b, std::move(xs), 3, root() / name);
    Events events;
    Tuner(b, b.devices()[0]).run(req, events);
    return events;
  }

  static void open(RunDocument& doc, const fs::path& dir) {
    QSignalSpy opened(&doc, &RunDocument::opened);
    doc.open(qstr(dir.string()));
    QVERIFY(opened.wait(30000));
  }

  static void checkWinnerRow(const RunPage& page, const QString& config, double median, double search) {
    QCOMPARE(cell(page, RunPage::ConfigColumn), config);
    QCOMPARE(cell(page, RunPage::MedianColumn), formatNs(median));
    QCOMPARE(cell(page, RunPage::ChosenByColumn), QStringLiteral("re-measure"));
    QCOMPARE(cell(page, RunPage::SearchColumn), formatNs(search));
  }

 private slots:
  void initTestCase() { initialize(); }
  void init() { tmp_ = std::make_unique<QTemporaryDir>(); }

  // Live, the search's best shows labelled as the search's until the shape's result names the
  // winner; reopened, results.json names the same one with the same numbers.
  void runPageShowsTheRemeasuresWinner() {
    const Events ev = tuneLucky({1, 2, 3, 4}, "lucky");
    QCOMPARE(ev.results.size(), std::size_t(1));
    TrialsModel model;
    Tester tester(&model, Tester::FailureReportingMode::Fatal);
    model.reset({QStringLiteral("x")});
    RunPage live(&model);
    model.appendTrials(ev.trials);
    QCOMPARE(cell(live, RunPage::ConfigColumn), QStringLiteral("search best: x=1"));
    QCOMPARE(cell(live, RunPage::MedianColumn), QString());
    QCOMPARE(cell(live, RunPage::ChosenByColumn), QStringLiteral("not decided"));
    QCOMPARE(cell(live, RunPage::SearchColumn), formatNs(90));
    model.addResult(ev.results.front());
    checkWinnerRow(live, QStringLiteral("x=2"), 100, 100);
    QVERIFY(live.flagWarning().isEmpty());

    RunDocument doc;
    open(doc, root() / "lucky");
    RunPage reopened(doc.trials());
    checkWinnerRow(reopened, QStringLiteral("x=2"), 100, 100);

    // A result ahead of its trials (a batch still on its way) marks the row when it comes.
    TrialsModel early;
    early.reset({QStringLiteral("x")});
    const ProblemResult& result = ev.results.front();
    TrialsFilterProxy winnersOnly;
    winnersOnly.setSourceModel(&early);
    winnersOnly.setWinnersOnly(true);
    early.addResult(result);
    QCOMPARE(early.winnerRow(result.problem.key()), -1);
    early.appendTrials(ev.trials);
    QCOMPARE(early.winnerRow(result.problem.key()), early.rowForId(result.choice.trial_id));
    QCOMPARE(winnersOnly.rowCount(), 1);
  }

  // x=1 alone against the slow x=4 wins its re-measure at 120 ns, a third off its 90 ns search:
  // flagged in the table and warned about above it, naming the shape and both numbers.
  void flaggedWinnerIsWarnedAbout() {
    tuneLucky({1, 4}, "disagree");
    RunDocument doc;
    open(doc, root() / "disagree");
    RunPage page(doc.trials());
    checkWinnerRow(page, QStringLiteral("x=1"), 120, 90);
    const QTableWidgetItem* median = page.winnerTable()->item(0, RunPage::MedianColumn);
    QVERIFY(!median->icon().isNull());
    QVERIFY2(median->toolTip().contains(QStringLiteral("disagree")), qPrintable(median->toolTip()));
    const QString warning = page.flagWarning();
    QVERIFY2(warning.contains(QStringLiteral("n=1")) && warning.contains(QStringLiteral("120 ns")) &&
                 warning.contains(QStringLiteral("90 ns")),
             qPrintable(warning));
  }

  // The winner's own row is marked, with the number it won by; its columns stay its search's.
  void trialsPageMarksTheWinnersRow() {
    const auto results = fixture::write_remeasured_run(root() / "run", 600, 3);
    RunDocument doc;
    open(doc, root() / "run");
    TrialsModel& model = *doc.trials();
    Tester tester(&model, Tester::FailureReportingMode::Fatal);
    int marked = 0;
    for (int r = 0; r < model.rowCount(); ++r) marked += model.index(r, 0).data(TrialsModel::WinnerRole).toBool();
    QCOMPARE(marked, 3);
    const int medianColumn = model.columnCount() - 9;
    QCOMPARE(model.headerData(medianColumn, Qt::Horizontal).toString(), QStringLiteral("Median"));
    for (const ProblemResult& r : results) {
      const int row = model.rowForId(r.choice.trial_id);
      QVERIFY(model.index(row, 0).data(TrialsModel::WinnerRole).toBool());
      QVERIFY(!model.index(row, TrialsModel::IdColumn).data(Qt::DecorationRole).value<QIcon>().isNull());
      const QString tip = model.index(row, 0).data(Qt::ToolTipRole).toString();
      const QString said = QStringLiteral("re-measured %1 (search %2)")
                               .arg(formatNs(r.best->stats.median_ns), formatNs(r.choice.search.median_ns));
      QVERIFY2(tip.contains(said), qPrintable(tip));
      QCOMPARE(model.index(row, medianColumn).data().toString(), formatNs(r.choice.search.median_ns));
      // The search's fastest trial is not the winner.
      const Trial fastest = fixture::ranked(model.trials(), r.problem).front();
      QVERIFY(!model.index(model.rowForId(fastest.id), 0).data(TrialsModel::WinnerRole).toBool());
    }
    TrialsFilterProxy proxy;
    proxy.setSourceModel(&model);
    Tester proxyTester(&proxy, Tester::FailureReportingMode::Fatal);
    proxy.setWinnersOnly(true);
    QCOMPARE(proxy.rowCount(), 3);
  }

  // The heatmap crowns the winner with its number, not the fastest cell; before the shape's result
  // it marks the fastest cell as the search's best.
  void heatmapCrownsTheWinner() {
    const auto results = fixture::write_remeasured_run(root() / "run", 600, 3);
    const std::vector<Trial> trials = RunStore::read_trials(root() / "run");
    const ProblemResult& r = results.front();
    const Trial lucky = fixture::ranked(trials, r.problem).front();
    const QStringList params{"BM", "BN", "BK", "unroll", "threads"};
    TrialsModel model;
    model.setTrials(params, trials);
    HeatmapView heatmap(&model);
    heatmap.setParameters(QStringLiteral("BN"), QStringLiteral("threads"));
    heatmap.setShapeFilter(qstr(r.problem.key()));
    heatmap.refresh();
    QCOMPARE(heatmap.crownedTrial(), lucky.id);
    QVERIFY(!heatmap.crownIsWinner());
    QVERIFY2(heatmap.crownText().contains(QStringLiteral("search best")), qPrintable(heatmap.crownText()));

    model.addResult(r);
    heatmap.refresh();
    QCOMPARE(heatmap.crownedTrial(), r.choice.trial_id);
    QVERIFY(heatmap.crownIsWinner());
    QVERIFY2(heatmap.crownText().contains(formatNs(r.best->stats.median_ns)) &&
                 heatmap.crownText().contains(QStringLiteral("re-measured")),
             qPrintable(heatmap.crownText()));
    QCOMPARE(heatmap.bestTrialAt(lucky.config.get("BN"), lucky.config.get("threads")), lucky.id);
    heatmap.resize(480, 360);
    QVERIFY(!heatmap.grab().isNull());
  }

  // The scatter charts put a star at the winner's deciding number, over its search trial.
  void chartsStarTheWinnerAtItsNumber() {
    const auto results = fixture::write_remeasured_run(root() / "run", 600, 3);
    RunDocument doc;
    open(doc, root() / "run");
    const ProblemResult& r = results[1];
    const Trial& won = trialWithId(*doc.trials(), r.choice.trial_id);
    LatencyOrderChart order(doc.trials());
    ParameterChart parameter(doc.trials());
    parameter.setParameter(QStringLiteral("BN"));
    for (TrialChartView* chart : std::initializer_list<TrialChartView*>{&order, &parameter}) {
      chart->setShapeFilter(qstr(r.problem.key()));
      chart->resize(640, 420);
      chart->show();
      chart->refresh();
      const QList<QPointF> stars = chart->winnerPoints();
      QCOMPARE(stars.size(), 1);
      QCOMPARE(stars.front().y(), r.best->stats.median_ns / 1e3);
    }
    // BN's values are powers of two: a log2 axis.
    QCOMPARE(parameter.winnerPoints().front().x(), std::log2(static_cast<double>(won.config.get("BN"))));
    order.setShapeFilter({});
    order.refresh();
    QCOMPARE(order.winnerPoints().size(), 3);
  }

  // Each drawn trial carries a whisker of its spread, so a noisy one is seen as noisy.
  void chartsDrawEachTrialsNoise() {
    std::vector<Trial> trials = fixture::trials(200, fixture::problems(1));
    const auto noisy =
        std::find_if(trials.begin(), trials.end(), [](const Trial& t) { return t.status == TrialStatus::Ok; });
    const double median = noisy->stats.median_ns;
    noisy->samples_ns = {median, median, median * 0.99, median * 1.01, median, median * 40, median * 30};
    noisy->stats = summarize(noisy->samples_ns);
    TrialsModel model;
    model.setTrials({"BM", "BN", "BK", "unroll", "threads"}, trials);
    LatencyOrderChart order(&model);
    ThroughputChart throughput(&model);
    for (TrialChartView* chart : std::initializer_list<TrialChartView*>{&order, &throughput}) {
      chart->resize(640, 420);
      chart->show();
      chart->refresh();
    }
    const auto spreads = order.drawnSpreads();
    const auto whisker =
        std::find_if(spreads.begin(), spreads.end(), [&](const auto& s) { return s.trial == noisy->id; });
    QVERIFY(whisker != spreads.end());
    QVERIFY2(whisker->high > 10 * median / 1e3, qPrintable(QString::number(whisker->high)));
    for (const auto& s : spreads)
      if (s.trial != noisy->id) QVERIFY(s.high < 1.05 * trialWithId(model, s.trial).stats.median_ns / 1e3);
    QVERIFY(order.chart()->title().contains(QStringLiteral("± std")));
    QVERIFY(throughput.drawnSpreads().empty());  // TFLOP/s has no latency whisker
    QVERIFY(!order.grab().isNull());
  }

  // Apply compares like with like and says which numbers; a flagged winner starts unchecked and
  // can be checked only once flagged winners are accepted, which apply then passes on.
  void applyPageComparesLikeWithLikeAndHoldsFlaggedBack() {
    const auto results = fixture::write_remeasured_run(root() / "run", 600, 3);
    RunDocument doc;
    open(doc, root() / "run");
    const std::string key0 = results[0].problem.local_key(), key1 = results[1].problem.local_key(),
                      key2 = results[2].problem.local_key();
    // key 1: an entry chosen by its search (the two were decided differently: search medians
    // compare); key 2: one chosen by a re-measure (re-measure medians); key 0: none.
    RegistryEntry bySearch;
    bySearch.config = Config({{"BM", 1}});
    bySearch.latency_avg_ns = bySearch.latency_median_ns = bySearch.search_median_ns =
        results[1].choice.search.median_ns * 2;
    bySearch.samples_ns.assign(9, bySearch.latency_median_ns);
    bySearch.benchmarking_method = "amortized";
    RegistryEntry byRemeasure = bySearch;
    byRemeasure.chosen_by = ChosenBy::Remeasure;
    byRemeasure.latency_avg_ns = byRemeasure.latency_median_ns = results[2].best->stats.median_ns * 2;
    byRemeasure.samples_ns.assign(9, byRemeasure.latency_median_ns);
    Registry reg("cpu", doc.results()->device_slug);
    reg.set("gemm", key1, bySearch);
    reg.set("gemm", key2, byRemeasure);
    const fs::path file = Registry::file_for(root() / "reg", "cpu", doc.results()->device_slug);
    fs::create_directories(file.parent_path());
    reg.save(file);

    DiffPage page(&doc);
    page.setRegistryRoot(qstr((root() / "reg").string()));
    QVERIFY2(page.compare(), qPrintable(page.statusText()));
    DiffModel& m = *page.model();
    Tester tester(&m, Tester::FailureReportingMode::Fatal);
    const auto row = [&](const std::string& key) {
      for (int r = 0; r < m.rowCount(); ++r)
        if (m.diff().entries[static_cast<std::size_t>(r)].key == key) return r;
      return -1;
    };
    const auto text = [&](const std::string& key, int column) { return m.index(row(key), column).data().toString(); };
    QCOMPARE(text(key1, DiffModel::ComparedColumn), QStringLiteral("search medians"));
    QCOMPARE(text(key1, DiffModel::OldColumn), formatNs(bySearch.search_median_ns));
    QCOMPARE(text(key1, DiffModel::NewColumn), formatNs(results[1].choice.search.median_ns));
    QCOMPARE(text(key2, DiffModel::ComparedColumn), QStringLiteral("re-measure medians"));
    QCOMPARE(text(key2, DiffModel::NewColumn), formatNs(results[2].best->stats.median_ns));
    QCOMPARE(text(key0, DiffModel::NewColumn), formatNs(results[0].best->stats.median_ns));
    QCOMPARE(text(key0, DiffModel::ComparedColumn), QStringLiteral("re-measure median"));

    const QModelIndex flagged = m.index(row(key0), DiffModel::ApplyColumn);
    QVERIFY(flagged.data(DiffModel::FlaggedRole).toBool());
    QVERIFY(!m.index(row(key1), DiffModel::ApplyColumn).data(DiffModel::FlaggedRole).toBool());
    QVERIFY(!m.index(row(key0), DiffModel::NewColumn).data(Qt::DecorationRole).value<QIcon>().isNull());
    QVERIFY(flagged.data(Qt::ToolTipRole).toString().contains(QStringLiteral("disagree")));
    QVERIFY(!m.isChecked(flagged.row()));
    QVERIFY(m.isChecked(row(key1)) && m.isChecked(row(key2)));
    QVERIFY(!(m.flags(flagged) & Qt::ItemIsEnabled));
    QVERIFY(!m.setData(flagged, Qt::Checked, Qt::CheckStateRole));
    QVERIFY(!page.acceptFlaggedBox()->isHidden());
    // The box names the flagged key by what tells it apart (M=16), its tooltip in full.
    QVERIFY(page.acceptFlaggedBox()->text().endsWith(QStringLiteral(": ") + m.keyLabels().label(key0)));
    QVERIFY(page.acceptFlaggedBox()->toolTip().contains(qstr(key0)));

    auto report = page.applySelected();
    QVERIFY(report);
    QCOMPARE(report->written.size(), std::size_t(2));
    QVERIFY(!Registry::load(file).find("gemm", key0));
    QVERIFY2(page.reportText().contains(QStringLiteral("skipped ") + qstr(key0)), qPrintable(page.reportText()));

    page.acceptFlaggedBox()->setChecked(true);
    const QModelIndex accepted = m.index(row(key0), DiffModel::ApplyColumn);
    QVERIFY(m.flags(accepted) & Qt::ItemIsUserCheckable);
    QVERIFY(m.setData(accepted, Qt::Checked, Qt::CheckStateRole));
    report = page.applySelected();
    QVERIFY(report);
    QCOMPARE(report->written.size(), std::size_t(1));
    const RegistryEntry* written = Registry::load(file).find("gemm", key0);
    QVERIFY(written);
    QVERIFY(written->flags.disagrees);
    QCOMPARE(written->latency_median_ns, results[0].best->stats.median_ns);
    QVERIFY(!page.acceptFlaggedBox()->isChecked());  // a new diff asks again
  }
};

QTEST_MAIN(TestOneWinner)
#include "test_one_winner.moc"
