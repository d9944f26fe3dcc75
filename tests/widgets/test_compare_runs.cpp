// The Apply page's "Compare with run…": two real CPU gemm runs side by side shape by shape (each
// run's winner, its number and noise, the speed-up, the configs a parameter a row, the shapes only
// one run has), with nothing to apply; a run of another family and folders that are no readable
// run are refused in words that name them.
#include <QAbstractItemModelTester>
#include <QPushButton>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QTableView>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "document_fixture.h"
#include "ktune/backends.h"
#include "ktune/diff.h"
#include "ktune/tuner.h"
#include "ktune/widgets/config_diff_model.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_compare_model.h"
#include "ktune/widgets/run_compare_panel.h"
#include "ktune/widgets/run_document.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestCompareRuns : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;
  fs::path before_, after_, qmatmul_;

  // A real CPU run: a few random configs of the family's own space on each shape, quickly timed.
  fs::path tune(const std::string& family, const std::string& shape, const std::string& name, unsigned seed) {
    const fs::path dir = fs::path(sstr(tmp_.path())) / name;
    fixture::quick_tune(find_backend(backends_, "cpu"), family, shape, dir, 4, seed);
    return dir;
  }

  static std::unique_ptr<RunDocument> open(const fs::path& dir) { return fixture::open_document(dir); }

  // Compares the page's run with `dir`; true once compared, false once refused.
  static bool compareWith(DiffPage& page, const fs::path& dir) {
    QSignalSpy compared(page.comparePanel(), &RunComparePanel::compared);
    QSignalSpy failed(page.comparePanel(), &RunComparePanel::failed);
    page.compareWithRun(qstr(dir.string()));
    [&] { QTRY_VERIFY_WITH_TIMEOUT(compared.count() + failed.count() > 0, 30000); }();
    return compared.count() > 0;
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
    // Before and after: M=64 and M=128 in both, M=16 only before, M=256 only after.
    before_ = tune("gemm", "M=16,64,128 N=64 K=64", "before", 1);
    after_ = tune("gemm", "M=64,128,256 N=64 K=64", "after", 2);
    qmatmul_ = tune("qmatmul", "batch=4 out=64 in=64", "qmatmul", 1);
  }

  // Each shape's two winners as the runs' results.json have them; shapes of one run say so.
  void comparesTwoRunsShapeByShape() {
    const auto doc = open(after_);
    QVERIFY(doc);
    DiffPage page(doc.get());
    QVERIFY(compareWith(page, before_));
    QVERIFY(page.isComparingRuns());
    const RunCompareModel* model = page.comparePanel()->model();
    QAbstractItemModelTester tester(const_cast<RunCompareModel*>(model),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model->rowCount(), 4);
    const RunResults after = RunStore::read_results(after_), before = RunStore::read_results(before_);
    const auto winner = [](const RunResults& r, const std::string& key) -> const ResultEntry* {
      for (const ResultEntry& e : r.entries)
        if (e.problem.key() == key) return &e;
      return nullptr;
    };
    QStringList verdicts;
    for (int row = 0; row < model->rowCount(); ++row) {
      const ComparedShape& s = model->comparison().shapes[static_cast<std::size_t>(row)];
      const ResultEntry* mine = winner(after, s.key);
      const ResultEntry* theirs = winner(before, s.key);
      QCOMPARE(s.run.has_value(), mine != nullptr);
      QCOMPARE(s.other.has_value(), theirs != nullptr);
      if (mine) QVERIFY(s.run->config.same_values(mine->config));
      if (theirs) QVERIFY(s.other->config.same_values(theirs->config));
      const QString verdict =
          model->data(model->index(row, RunCompareModel::VerdictColumn), Qt::DisplayRole).toString();
      verdicts << verdict;
      if (!theirs) QCOMPARE(verdict, QStringLiteral("only in this run"));
      if (!mine) QCOMPARE(verdict, QStringLiteral("only in before"));
      if (mine && theirs) {
        // Speed-up: the other run's number over this run's, as the two numbers read.
        QCOMPARE(model->data(model->index(row, RunCompareModel::RatioColumn), Qt::DisplayRole).toString(),
                 QStringLiteral("%1×").arg(s.other_ns / s.run_ns, 0, 'f', 3));
        QCOMPARE(model->data(model->index(row, RunCompareModel::RunColumn), Qt::DisplayRole).toString(),
                 formatNs(s.run_ns));
        // The noise of the samples each winner was chosen by.
        QCOMPARE(model->data(model->index(row, RunCompareModel::RunNoiseColumn), Qt::DisplayRole).toString(),
                 QStringLiteral("±%1 %").arg(100 * robust_rel_error(mine->samples_ns), 0, 'f', 2));
        QCOMPARE(model->data(model->index(row, RunCompareModel::OtherNoiseColumn), Qt::DisplayRole).toString(),
                 QStringLiteral("±%1 %").arg(100 * robust_rel_error(theirs->samples_ns), 0, 'f', 2));
      }
    }
    // Keys by what tells them apart: only M differs.
    QCOMPARE(model->data(model->index(0, RunCompareModel::KeyColumn), Qt::DisplayRole).toString(),
             QStringLiteral("M=16"));
    QVERIFY(model->data(model->index(0, RunCompareModel::KeyColumn), Qt::ToolTipRole)
                .toString()
                .startsWith(QStringLiteral("M=16,N=64,K=64")));
    QVERIFY(page.comparePanel()->statusText().contains(QStringLiteral("2 shape(s) in both runs")));
    QVERIFY(page.comparePanel()->statusText().contains(QStringLiteral("1 only in this run, 1 only in before")));
    QVERIFY(page.comparePanel()->titleText().contains(QStringLiteral("<b>before</b>")));

    // The config panel lays out the selected shape's two configs, the other run on the left.
    const ConfigDiffModel* configs = page.comparePanel()->configDiff();
    QAbstractItemModelTester configTester(const_cast<ConfigDiffModel*>(configs),
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(configs->headerData(ConfigDiffModel::RegistryColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("Other run"));
    QCOMPARE(configs->headerData(ConfigDiffModel::RunColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("This run"));
    QCOMPARE(page.comparePanel()->table()->currentIndex().row(), 1);  // opens on the first shape both have
    page.comparePanel()->table()->setCurrentIndex(model->index(1, 0));
    const ComparedShape& both = model->comparison().shapes[1];
    QVERIFY(both.both());
    int changed = 0;
    for (const ParameterChange& c : configs->changes()) {
      QVERIFY(c.inRun && c.inRegistry);
      QCOMPARE(c.run, qstr(both.run->config.value(sstr(c.name)).text()));
      QCOMPARE(c.registry, qstr(both.other->config.value(sstr(c.name)).text()));
      changed += c.changed;
    }
    QCOMPARE(configs->changedCount(), changed);
    const QString cell = model->data(model->index(1, RunCompareModel::ConfigColumn), Qt::DisplayRole).toString();
    QCOMPARE(cell == QStringLiteral("the same config"), changed == 0);
    // A shape only the other run has shows its config on the other run's side.
    page.comparePanel()->table()->setCurrentIndex(model->index(0, 0));
    for (const ParameterChange& c : configs->changes()) QVERIFY(c.inRegistry && !c.inRun);

    // Nothing here applies: the Apply button is not on the comparison, and "Back to the registry"
    // returns to the diff that has it.
    for (QPushButton* b : page.comparePanel()->findChildren<QPushButton*>())
      QVERIFY(!b->text().contains(QStringLiteral("Apply")));
    page.closeComparison();
    QVERIFY(!page.isComparingRuns());
  }

  // Winners timed at SM clocks apart (a GPU at its power cap, and one that was not): the verdict
  // reads "(clocks differ)" and its tooltip and the speed-up's say which clocks; rows whose clocks
  // agree, or that read none, say nothing of clocks.
  void clocksApartAreMarked() {
    RunResults after = RunStore::read_results(after_), before = RunStore::read_results(before_);
    const std::string agree = after.entries.front().problem.key();
    for (ResultEntry& e : after.entries) e.conditions[kSmClockMhz] = 1425;
    for (ResultEntry& e : before.entries) e.conditions[kSmClockMhz] = e.problem.key() == agree ? 1430 : 1980;
    RunCompareModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setComparison(compare_runs(after, before), QStringLiteral("before"));
    int marked = 0, quiet = 0;
    for (int row = 0; row < model.rowCount(); ++row) {
      const ComparedShape& s = model.comparison().shapes[static_cast<std::size_t>(row)];
      if (!s.both()) continue;
      const QString verdict = model.data(model.index(row, RunCompareModel::VerdictColumn), Qt::DisplayRole).toString();
      const QString tip = model.data(model.index(row, RunCompareModel::VerdictColumn), Qt::ToolTipRole).toString();
      const QString ratioTip = model.data(model.index(row, RunCompareModel::RatioColumn), Qt::ToolTipRole).toString();
      if (s.key == agree) {
        QVERIFY2(!verdict.contains(QStringLiteral("clocks")) && !tip.contains(QStringLiteral("MHz")), qPrintable(tip));
        QVERIFY(ratioTip.isEmpty());
        QVERIFY(!model.data(model.index(row, RunCompareModel::RatioColumn), Qt::ForegroundRole).isValid());
        ++quiet;
      } else {
        QVERIFY2(verdict.endsWith(QStringLiteral(" (clocks differ)")), qPrintable(verdict));
        QCOMPARE(model.data(model.index(row, RunCompareModel::RatioColumn), Qt::ForegroundRole).value<QColor>(),
                 diffClassColor(DiffClass::NotComparable));
        for (const QString& t : {tip, ratioTip})
          QVERIFY2(t.contains(QStringLiteral("The other run measured at 1980 MHz, this run at 1425 MHz")),
                   qPrintable(t));
        ++marked;
      }
    }
    QCOMPARE(quiet, 1);
    QCOMPARE(marked, 1);
  }

  // On the page: the verdict column shows its marker whole, the status line counts such shapes,
  // and the selected shape's note stands above its configs.
  void clocksApartAreSaidOnThePanel() {
    const auto clocked = [&](const fs::path& from, const std::string& name, double mhz) {
      const fs::path to = fs::path(sstr(tmp_.path())) / name;
      fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
      nlohmann::json results = nlohmann::json::parse(std::ifstream(to / "results.json"));
      for (auto& r : results["results"]) r["conditions"] = {{"sm_clock_mhz", mhz}};
      std::ofstream(to / "results.json") << results.dump(1);
      return to;
    };
    const auto doc = open(clocked(after_, "after_hot", 1425));
    QVERIFY(doc);
    DiffPage page(doc.get());
    QVERIFY(compareWith(page, clocked(before_, "before_cool", 1980)));
    const RunComparePanel* panel = page.comparePanel();
    QVERIFY2(panel->statusText().contains(QStringLiteral("2 compare numbers taken at SM clocks apart")),
             qPrintable(panel->statusText()));
    QVERIFY2(panel->configTitle().contains(QStringLiteral("The other run measured at 1980 MHz, this run at 1425 MHz")),
             qPrintable(panel->configTitle()));
    // The marker is not cut off: the column is as wide as its longest verdict.
    const RunCompareModel* model = panel->model();
    const QString verdict = model->data(model->index(1, RunCompareModel::VerdictColumn), Qt::DisplayRole).toString();
    QVERIFY2(verdict.endsWith(QStringLiteral(" (clocks differ)")), qPrintable(verdict));
    QVERIFY(panel->table()->columnWidth(RunCompareModel::VerdictColumn) >=
            panel->table()->fontMetrics().horizontalAdvance(verdict));
  }

  // A run of another family is not compared shape by shape: the page says which families.
  void anotherFamilyIsRefused() {
    const auto doc = open(after_);
    QVERIFY(doc);
    DiffPage page(doc.get());
    QVERIFY(!compareWith(page, qmatmul_));
    const QString status = page.comparePanel()->statusText();
    QVERIFY2(status.contains(QStringLiteral("run qmatmul tunes qmatmul")) &&
                 status.contains(QStringLiteral("run after tunes gemm")),
             qPrintable(status));
    QCOMPARE(page.comparePanel()->model()->rowCount(), 0);
  }

  // A folder that is not a run, a missing one and a run whose results.json is damaged are named.
  void unreadableFoldersAreNamed() {
    const auto doc = open(after_);
    QVERIFY(doc);
    DiffPage page(doc.get());
    const fs::path empty = fs::path(sstr(tmp_.path())) / "not_a_run";
    fs::create_directories(empty);
    QVERIFY(!compareWith(page, empty));
    QVERIFY2(page.comparePanel()->statusText().contains(QStringLiteral("has no results.json")),
             qPrintable(page.comparePanel()->statusText()));
    QVERIFY(!compareWith(page, fs::path(sstr(tmp_.path())) / "absent"));
    QVERIFY2(page.comparePanel()->statusText().contains(QStringLiteral("is not a folder")),
             qPrintable(page.comparePanel()->statusText()));

    const fs::path damaged = fs::path(sstr(tmp_.path())) / "damaged";
    fs::copy(before_, damaged, fs::copy_options::recursive);
    std::ofstream(damaged / "results.json") << "{ not json";
    QVERIFY(!compareWith(page, damaged));
    const QString status = page.comparePanel()->statusText();
    QVERIFY2(
        status.startsWith(QStringLiteral("Cannot compare with ")) && status.contains(QStringLiteral("results.json")),
        qPrintable(status));
    QCOMPARE(page.comparePanel()->model()->rowCount(), 0);
    // A readable run afterwards compares again.
    QVERIFY(compareWith(page, before_));
    QCOMPARE(page.comparePanel()->model()->rowCount(), 4);
  }

  // The comparison follows the opened run: opening another one compares that one.
  void followsTheOpenedRun() {
    const auto doc = open(after_);
    QVERIFY(doc);
    DiffPage page(doc.get());
    QVERIFY(compareWith(page, before_));
    QSignalSpy compared(page.comparePanel(), &RunComparePanel::compared);
    QSignalSpy opened(doc.get(), &RunDocument::opened);
    doc->open(qstr(before_.string()));
    QVERIFY(opened.wait(30000));
    QTRY_VERIFY(compared.count() > 0);
    // A run against itself: every shape in both, the same configs.
    const RunCompareModel* model = page.comparePanel()->model();
    QCOMPARE(model->rowCount(), 3);
    for (const ComparedShape& s : model->comparison().shapes) {
      QVERIFY(s.both());
      QVERIFY(s.run->config.same_values(s.other->config));
    }
  }
};

QTEST_MAIN(TestCompareRuns)
#include "test_compare_runs.moc"
