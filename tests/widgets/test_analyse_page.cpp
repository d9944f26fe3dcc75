// The Analyse page answers a tuner's questions about one shape of a real CPU run (issue 21):
// which parameters matter (fANOVA importance beside each parameter's correlation with latency),
// how latency moves with each parameter (a slice per parameter, on the parameter's own axis,
// failures counted per value), and what the best configs share (parallel coordinates whose
// brushing filters the Trials page's table). Each chart exports PNG, SVG and CSV titled with the
// run and the shape. A grouped_gemm run (booleans, powers of two, plain integers) and a gemm run
// of one config (too few trials to say anything).
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QToolButton>
#include <QtTest>

#include <cmath>
#include <map>
#include <set>

#include "document_fixture.h"
#include "ktune/backends.h"
#include "ktune/csv.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/tuner.h"
#include "ktune/widgets/analyse_page.h"
#include "ktune/widgets/chart_frame.h"
#include "ktune/widgets/importance_model.h"
#include "ktune/widgets/parallel_coordinates.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/slice_chart.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestAnalysePage : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> cpu_;
  QTemporaryDir tmp_;
  fs::path grouped_, single_;

  // A real CPU run: `budget` random configs of the family's own space on each shape.
  // Every config that runs gets a time, however slow.
  fs::path tune(const std::string& family, const std::string& shape, int budget, const std::string& name) {
    const fs::path dir = fs::path(sstr(tmp_.path())) / name;
    fixture::quick_tune(*cpu_, family, shape, dir, budget, 3, 30, fixture::no_slow_abort);
    return dir;
  }

  static std::unique_ptr<RunDocument> open(const fs::path& dir) { return fixture::open_document(dir); }

  static void show(QWidget& w) {
    w.resize(1300, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
  }

  // The ok trials of `key`, as the page reads them.
  static std::vector<const Trial*> okTrials(const TrialsModel& model, const QString& key) {
    std::vector<const Trial*> out;
    for (const Trial& t : model.trials())
      if (qstr(t.problem_key) == key && t.status == TrialStatus::Ok && t.stats.count > 0) out.push_back(&t);
    return out;
  }

  static std::vector<std::vector<std::string>> parseCsv(const QString& file) {
    std::vector<std::vector<std::string>> rows;
    for (const csv::Record& r : csv::parse(read_text_file(sstr(file)), sstr(file))) rows.push_back(r.fields);
    return rows;
  }

 private slots:
  void initTestCase() {
    initialize();
    cpu_ = make_cpu_backend();  // a CPU run needs no other backend
    grouped_ = tune("grouped_gemm", "experts=4 tokens=32 topk=2 hidden=64 intermediate=64 pass=fwd,dX", 24, "grouped");
    single_ = tune("gemm", "M=16 N=64 K=64", 1, "single");
  }

  // One shape at a time, picked by the fields that tell shapes apart; the importance table lists
  // every parameter, most important first, fixed ones last and said so, with a correlation
  // beside each: ρ for numbers and booleans, η for strings.
  void importanceOfARealRun() {
    const auto doc = open(grouped_);
    QVERIFY(doc);
    AnalysePage page(doc->trials());
    show(page);
    QCOMPARE(page.shapeCombo()->count(), 2);
    QStringList labels;
    for (int i = 0; i < page.shapeCombo()->count(); ++i) labels << page.shapeCombo()->itemText(i);
    QCOMPARE(std::set<QString>(labels.begin(), labels.end()),
             (std::set<QString>{QStringLiteral("pass=fwd"), QStringLiteral("pass=dX")}));
    page.setShape(page.shapeCombo()->itemData(1).toString());
    page.refresh();

    ImportanceModel* model = page.importance();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const ImportanceReport& report = model->report();
    QCOMPARE(report.status, ImportanceReport::Status::Ok);
    QCOMPARE(report.trials, okTrials(*doc->trials(), page.shape()).size());
    QCOMPARE(model->rowCount(), static_cast<int>(doc->trials()->parameters().size()));
    double sum = 0, previous = 2;
    bool fixedSeen = false;
    for (int row = 0; row < model->rowCount(); ++row) {
      const ParameterImportance& p = model->parameter(row);
      const QString shown = model->index(row, ImportanceModel::ImportanceColumn).data().toString();
      if (p.fixed()) {
        fixedSeen = true;
        QCOMPARE(shown, QStringLiteral("fixed"));
        QVERIFY(model->index(row, ImportanceModel::ImportanceColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("widen it")));
        continue;
      }
      QVERIFY2(!fixedSeen, "a fixed parameter listed above a varying one");
      QVERIFY(p.importance <= previous);
      previous = p.importance;
      sum += p.importance;
      QVERIFY2(shown.endsWith(QStringLiteral(" %")), qPrintable(shown));
      const QString correlation = model->index(row, ImportanceModel::CorrelationColumn).data().toString();
      QVERIFY2(correlation.startsWith(p.ordered ? QStringLiteral("ρ ") : QStringLiteral("η ")),
               qPrintable(correlation));
    }
    QVERIFY(std::abs(sum - 1) < 1e-9);
    // Booleans have an order (false < true): their correlation has a sign.
    const int permute = static_cast<int>(model->rankedNames().indexOf(QStringLiteral("permute_x")));
    QVERIFY(permute >= 0);
    QVERIFY(model->parameter(permute).ordered);
    QVERIFY(page.importanceCaption().contains(QStringLiteral("fANOVA")));
    QVERIFY(page.frame(QStringLiteral("parameter_importance"))->toolTip().contains(QStringLiteral("impurity")));
  }

  // A slice per parameter that took more than one value, most important first, each on its
  // parameter's own axis; every ok trial of the shape is in each slice once; values where trials
  // failed say how many.
  void slicesFollowEachParameter() {
    const auto doc = open(grouped_);
    QVERIFY(doc);
    AnalysePage page(doc->trials());
    show(page);
    page.refresh();
    const QStringList ranked = page.importance()->rankedNames();
    const QList<SliceChart*> slices = page.slices();
    QVERIFY(!slices.isEmpty());
    qsizetype last = -1;
    const std::size_t ok = okTrials(*doc->trials(), page.shape()).size();
    for (SliceChart* s : slices) {
      const qsizetype at = ranked.indexOf(qstr(s->slice().parameter));
      QVERIFY(at > last);
      last = at;
      QVERIFY(s->slice().values.size() >= 2);
      QCOMPARE(s->slice().ok(), ok);
      QCOMPARE(s->xTickLabels().size(), static_cast<qsizetype>(s->slice().values.size()));
      const std::string& name = s->slice().parameter;
      if (name == "permute_x" || name == "permute_y") {
        QCOMPARE(s->axisKind(), ParameterAxis::Kind::Categories);
        QCOMPARE(s->xTickLabels(), (QStringList{QStringLiteral("false"), QStringLiteral("true")}));
      }
      if (name == "threads") QCOMPARE(s->axisKind(), ParameterAxis::Kind::Log2);
      if (name == "MR" && s->slice().values.size() > 2 && s->slice().values.back().value == ParamValue(14))
        QCOMPARE(s->axisKind(), ParameterAxis::Kind::Linear);
      QVERIFY(s->describe(0).contains(qstr(name)));
    }
    QVERIFY(slices.front()->logScale());  // latencies spread over orders of magnitude
    page.setLogScale(false);
    QVERIFY(!page.slices().front()->logScale());

    // Failures recorded at one value: the slice of that parameter counts them there, beside any the
    // real run had there already (a trial that timed out on a loaded host).
    const Trial first = *okTrials(*doc->trials(), page.shape()).front();
    std::map<std::string, SliceValue> before;
    for (SliceChart* s : page.slices())
      for (const SliceValue& v : s->slice().values)
        if (v.value == first.config.value(s->slice().parameter)) before[s->slice().parameter] = v;
    QList<Trial> failed;
    for (int i = 0; i < 3; ++i) {
      Trial t = first;
      t.id = 100000 + i;
      t.status = i < 2 ? TrialStatus::CompileError : TrialStatus::Crashed;
      t.stats = {};
      t.samples_ns.clear();
      failed << t;
    }
    doc->trials()->appendTrials(failed);
    page.refresh();
    for (SliceChart* s : page.slices()) {
      const ParamValue& v = first.config.value(s->slice().parameter);
      for (std::size_t i = 0; i < s->slice().values.size(); ++i)
        if (s->slice().values[i].value == v) {
          const SliceValue& now = s->slice().values[i];
          const SliceValue& was = before.at(s->slice().parameter);
          QCOMPARE(SliceChart::failureMark(now), QStringLiteral("✕%1").arg(was.failed_total() + 3));
          QCOMPARE(now.failed[static_cast<std::size_t>(TrialStatus::CompileError)],
                   was.failed[static_cast<std::size_t>(TrialStatus::CompileError)] + 2);
          QCOMPARE(now.failed[static_cast<std::size_t>(TrialStatus::Crashed)],
                   was.failed[static_cast<std::size_t>(TrialStatus::Crashed)] + 1);
          QVERIFY(s->describe(i).contains(
              QStringLiteral("%1 failed: %2").arg(now.failed_total()).arg(qstr(now.failed_text()))));
        }
    }
  }

  // The best N ok trials, fastest first; dragging along an axis keeps the lines within it, the
  // Trials page's table shows only them, and the slices ring them; a click clears the brush.
  void brushingFiltersTheTrialsTable() {
    const auto doc = open(grouped_);
    QVERIFY(doc);
    AnalysePage page(doc->trials());
    TrialsPage trialsPage(doc->trials());  // follows the model's brush on its own
    TrialBrush* brush = doc->trials()->brush();
    show(page);
    page.refresh();
    const int listed = trialsPage.proxy()->rowCount();
    ParallelCoordinates* pc = page.parallelCoordinates();
    const std::size_t ok = okTrials(*doc->trials(), page.shape()).size();
    QCOMPARE(pc->shownTrials().size(), static_cast<qsizetype>(std::min<std::size_t>(20, ok)));
    double previous = 0;
    for (qint64 id : pc->shownTrials()) {
      const double median = doc->trials()->trial(doc->trials()->rowForId(id)).stats.median_ns;
      QVERIFY(median >= previous);
      previous = median;
    }
    QVERIFY(pc->axisNames().last().startsWith(QStringLiteral("median (")));
    page.setBestCount(8);
    const qsizetype shown = std::min<qsizetype>(8, static_cast<qsizetype>(ok));
    QCOMPARE(pc->shownTrials().size(), shown);
    QVERIFY(shown >= 2);

    // Drag along the latency axis over its lower half: the faster lines stay.
    const int latency = static_cast<int>(pc->axisNames().size()) - 1;
    QSignalSpy spy(brush, &TrialBrush::changed);
    QTest::mousePress(pc, Qt::LeftButton, {}, pc->pointOn(latency, 0.0));
    QTest::mouseMove(pc, pc->pointOn(latency, 0.25));
    QTest::mouseRelease(pc, Qt::LeftButton, {}, pc->pointOn(latency, 0.5));
    QCOMPARE(spy.count(), 1);
    const QList<qint64> kept = brush->ids();
    QVERIFY(brush->active());
    QCOMPARE(brush->shape(), page.shape());
    QVERIFY(!kept.isEmpty() && kept.size() < shown);
    for (qint64 id : pc->shownTrials()) {
      // The drag ends on a whole pixel, so a line within a pixel or so of 0.5 (the timings are live)
      // may fall either side of the brush's edge: only those clear of it are checked.
      const double t = pc->positionOf(id, latency);
      if (std::abs(t - 0.5) > 0.01) QCOMPARE(kept.contains(id), t < 0.5);
    }
    QVERIFY(!trialsPage.brushedButton()->isHidden());
    QVERIFY(trialsPage.brushedButton()->isChecked());
    QCOMPARE(trialsPage.proxy()->rowCount(), kept.size());
    for (SliceChart* s : page.slices()) QCOMPARE(s->markedCount(), static_cast<int>(kept.size()));

    // Unchecking the button shows every trial again while the brush stays.
    trialsPage.brushedButton()->setChecked(false);
    QCOMPARE(trialsPage.proxy()->rowCount(), listed);

    // A boolean axis: a brush over its top keeps the lines with `true`.
    const int permute = static_cast<int>(pc->axisNames().indexOf(QStringLiteral("permute_x")));
    if (permute >= 0) {
      pc->clearBrushes();
      pc->setBrush(permute, 0.9, 1.0);
      for (qint64 id : pc->selectedTrials())
        QCOMPARE(doc->trials()->trial(doc->trials()->rowForId(id)).config.value("permute_x"), ParamValue(true));
    }

    // A click on a brushed axis clears it; with no brush left, the table's filter goes too.
    pc->clearBrushes();
    pc->setBrush(latency, 0, 0.5);
    QTest::mouseClick(pc, Qt::LeftButton, {}, pc->pointOn(latency, 0.3));
    QVERIFY(!pc->brushing());
    QVERIFY(!brush->active());
    QVERIFY(!trialsPage.brushedButton()->isChecked());
    QVERIFY(trialsPage.brushedButton()->isHidden());
    QCOMPARE(trialsPage.proxy()->rowCount(), listed);
    for (SliceChart* s : page.slices()) QCOMPARE(s->markedCount(), 0);

    // Clicking a line names its trial.
    QSignalSpy clicked(&page, &AnalysePage::trialClicked);
    const qint64 best = pc->shownTrials().front();
    QTest::mouseClick(
        pc, Qt::LeftButton, {},
        QPoint((pc->pointOn(0, 0).x() + pc->pointOn(1, 0).x()) / 2,
               (pc->pointOn(0, pc->positionOf(best, 0)).y() + pc->pointOn(1, pc->positionOf(best, 1)).y()) / 2));
    QVERIFY(!clicked.isEmpty());

    // Another run in the model: a brush on the old one's trials goes, and the table's filter too.
    pc->setBrush(latency, 0, 0.5);
    QVERIFY(trialsPage.brushedButton()->isChecked());
    doc->trials()->reset(doc->trials()->parameters());
    QTRY_VERIFY(trialsPage.brushedButton()->isHidden());
    QVERIFY(!brush->active());
    QVERIFY(pc->shownTrials().isEmpty());
  }

  // Every chart as PNG and SVG titled with the run and the shape, and its data as CSV.
  void exportsTitledPicturesAndCsv() {
    const auto doc = open(grouped_);
    QVERIFY(doc);
    AnalysePage page(doc->trials());
    show(page);
    page.refresh();
    const QString folder = tmp_.filePath(QStringLiteral("export"));
    QVERIFY(QDir().mkpath(folder));
    const QStringList files = page.exportAll(folder, QStringLiteral("grouped"));
    QCOMPARE(files.size(), 9);
    const QString run = doc->trials()->runName();
    QVERIFY(!run.isEmpty());
    for (const QString& f : files) {
      QVERIFY2(QFileInfo(f).size() > 0, qPrintable(f));
      if (f.endsWith(QLatin1String(".png"))) QVERIFY(!QImage(f).isNull());
      if (f.endsWith(QLatin1String(".svg"))) {
        const QString svg = qstr(read_text_file(sstr(f)));
        QVERIFY2(svg.contains(run) && svg.contains(QStringLiteral("pass=")), qPrintable(f));
      }
      if (!f.endsWith(QLatin1String(".csv"))) continue;
      const auto rows = parseCsv(f);
      QVERIFY(rows.size() > 1);
      QCOMPARE(rows[0][0], std::string("run"));
      QCOMPARE(rows[0][1], std::string("shape"));
      for (std::size_t r = 1; r < rows.size(); ++r) {
        QCOMPARE(qstr(rows[r][0]), run);
        QCOMPARE(qstr(rows[r][1]), page.shape());
      }
    }
    const auto importance = parseCsv(QDir(folder).filePath(QStringLiteral("grouped_parameter_importance.csv")));
    QCOMPARE(importance.size(), static_cast<std::size_t>(doc->trials()->parameters().size()) + 1);
    const auto lines = parseCsv(QDir(folder).filePath(QStringLiteral("grouped_parallel_coordinates.csv")));
    QCOMPARE(lines.size(), static_cast<std::size_t>(page.parallelCoordinates()->shownTrials().size()) + 1);
    // The screen keeps its short heading.
    QCOMPARE(page.frame(QStringLiteral("parameter_importance"))->heading(), QStringLiteral("Which parameters matter"));
    QVERIFY(page.exportTitle(QStringLiteral("X")).contains(run));

    bool refused = false;
    try {
      page.frame(QStringLiteral("parallel_coordinates"))->exportTo(QStringLiteral("/nonexistent/dir/x.csv"));
    } catch (const InputError& e) {
      refused = QString::fromUtf8(e.what()).contains(QStringLiteral("/nonexistent/dir/x.csv"));
    }
    QVERIFY(refused);
  }

  // One config measured: nothing can be said of importance, and the page says so rather than
  // showing bars.
  void notEnoughTrialsIsSaid() {
    const auto doc = open(single_);
    QVERIFY(doc);
    AnalysePage page(doc->trials());
    show(page);
    page.refresh();
    QCOMPARE(page.importance()->report().status, ImportanceReport::Status::NotEnoughTrials);
    QVERIFY2(page.importanceCaption().startsWith(QStringLiteral("not enough trials")),
             qPrintable(page.importanceCaption()));
    for (int row = 0; row < page.importance()->rowCount(); ++row) {
      const QModelIndex i = page.importance()->index(row, ImportanceModel::ImportanceColumn);
      QCOMPARE(i.data(ImportanceModel::BarKindRole).toInt(), static_cast<int>(ImportanceModel::BarKind::None));
    }
    QVERIFY(page.slices().isEmpty());
    QVERIFY(page.slicesCaption().contains(QStringLiteral("No parameter took more than one value")));
    QVERIFY(page.slicesCaption().contains(QStringLiteral("Fixed in this shape")));
    QVERIFY(page.parallelCoordinates()->shownTrials().size() <= 1);
  }

  // The workbench shows the page by its name.
  void workbenchOpensOnTheAnalysePage() {
    const QString program = qEnvironmentVariable("KTUNE_WORKBENCH");
    QVERIFY2(!program.isEmpty(), "KTUNE_WORKBENCH is not set: run the suite through ctest, which sets it");
    const QString png = tmp_.filePath(QStringLiteral("analyse.png"));
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(program, {QStringLiteral("--open"), qstr(grouped_.string()), QStringLiteral("--page"),
                      QStringLiteral("analyse"), QStringLiteral("--screenshot"), png});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(!QImage(png).isNull());
    p.start(program, {QStringLiteral("--page"), QStringLiteral("analyze")});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(QStringLiteral("analyse")));
  }
};

QTEST_MAIN(TestAnalysePage)
#include "test_analyse_page.moc"
