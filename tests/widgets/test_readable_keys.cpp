// Keys and configs a tuner can read: shapes listed side by side (Run page winners, trials table,
// shape picker, Apply page) show the fields that tell them apart, with the whole key in a
// tooltip; the Apply page lays the registry's config and the run's side by side a parameter a
// row in the run's order, changed values marked. Real CPU runs of the families whose keys differ
// past a table cell's width: grouped_gemm's pass, gemm_a8w8_blockscale's q_dtype,
// paged_attention's num_sequences. Also the replay's title and the Run page's Failed count.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <set>

#include "document_fixture.h"
#include "ktune/backends.h"
#include "ktune/registry.h"
#include "ktune/replay_backend.h"
#include "ktune/tuner.h"
#include "ktune/widgets/config_diff_model.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/key_labels.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/replay_dialog.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestReadableKeys : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;
  fs::path grouped_, a8w8_, paged_;

  // A real CPU run: a few random configs of the family's own space on each shape, quickly timed.
  fs::path tune(const std::string& family, const std::string& shape, const std::string& name) {
    const fs::path dir = fs::path(sstr(tmp_.path())) / name;
    fixture::quick_tune(find_backend(backends_, "cpu"), family, shape, dir, 3, 1);
    return dir;
  }

  static std::unique_ptr<RunDocument> open(const fs::path& dir) { return fixture::open_document(dir); }

  static std::vector<std::string> keysOf(const fs::path& dir) {
    std::vector<std::string> keys;
    for (const Problem& p : RunStore::read_metadata(dir).problems) keys.push_back(p.key());
    return keys;
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
    grouped_ = tune("grouped_gemm", "experts=4 tokens=32 topk=2 hidden=64 intermediate=64 pass=fwd,dX,dW", "grouped");
    a8w8_ = tune("gemm_a8w8_blockscale", "M=16 N=128 K=128 q_dtype=int8,fp8_e4m3 out_dtype=f32", "a8w8");
    paged_ = tune("paged_attention",
                  "num_sequences=2,4 num_q_heads=4 num_kv_heads=2 head_dim=32 page_size=16 max_model_len=64", "paged");
  }

  // The fields every key shares are left out; what differs stays, in the key's own order.
  void labelsKeepWhatDiffers() {
    const std::vector<std::string> grouped = keysOf(grouped_);
    QCOMPARE(grouped.size(), std::size_t(3));
    const KeyLabels g(grouped);
    QStringList passes;
    for (const std::string& k : grouped) passes << g.label(k);
    QCOMPARE(std::set<QString>(passes.begin(), passes.end()),
             (std::set<QString>{QStringLiteral("pass=fwd"), QStringLiteral("pass=dX"), QStringLiteral("pass=dW")}));
    QVERIFY2(g.common().startsWith(QStringLiteral("experts=4, tokens=32, topk=2")), qPrintable(g.common()));
    QVERIFY(!g.common().contains(QStringLiteral("pass")));
    QVERIFY(g.toolTip(grouped[0]).startsWith(qstr(grouped[0])));

    const KeyLabels q(keysOf(a8w8_));
    QStringList dtypes;
    for (const std::string& k : keysOf(a8w8_)) dtypes << q.label(k);
    dtypes.sort();
    QCOMPARE(dtypes, (QStringList{QStringLiteral("q_dtype=fp8_e4m3"), QStringLiteral("q_dtype=int8")}));

    const KeyLabels p(keysOf(paged_));
    QStringList sequences;
    for (const std::string& k : keysOf(paged_)) sequences << p.label(k);
    sequences.sort();
    QCOMPARE(sequences, (QStringList{QStringLiteral("num_sequences=2"), QStringLiteral("num_sequences=4")}));
  }

  void labelEdges() {
    // One key: nothing to compare it with, so it is shown whole; a key not given reads as itself.
    const KeyLabels one(QStringList{QStringLiteral("M=16,N=512")});
    QCOMPARE(one.label(QStringLiteral("M=16,N=512")), QStringLiteral("M=16,N=512"));
    QCOMPARE(one.common(), QString());
    QCOMPARE(one.label(QStringLiteral("M=32,N=512")), QStringLiteral("M=32,N=512"));
    // A field only some keys have (a tensor-parallel suffix) tells them apart; two fields differ.
    const KeyLabels tp(QStringList{QStringLiteral("M=16,N=512,K=64"), QStringLiteral("M=16,N=512,K=64,tp=2/out"),
                                   QStringLiteral("M=32,N=512,K=128")});
    QCOMPARE(tp.label(QStringLiteral("M=16,N=512,K=64")), QStringLiteral("M=16, K=64"));
    QCOMPARE(tp.label(QStringLiteral("M=16,N=512,K=64,tp=2/out")), QStringLiteral("M=16, K=64, tp=2/out"));
    QCOMPARE(tp.common(), QStringLiteral("N=512"));
    // A key with nothing of its own keeps its whole text; spellings of one number stay apart.
    const KeyLabels suffix(QStringList{QStringLiteral("N=512"), QStringLiteral("N=512,tp=2/out")});
    QCOMPARE(suffix.label(QStringLiteral("N=512")), QStringLiteral("N=512"));
    QCOMPARE(suffix.label(QStringLiteral("N=512,tp=2/out")), QStringLiteral("tp=2/out"));
    const KeyLabels spelled(QStringList{QStringLiteral("M=16"), QStringLiteral("M=016")});
    QCOMPARE(spelled.label(QStringLiteral("M=016")), QStringLiteral("M=016"));
    QCOMPARE(KeyLabels().label(QStringLiteral("a=1")), QStringLiteral("a=1"));
  }

  // grouped_gemm's rows on the Run page and the trials table say which pass they are.
  void runAndTrialsPagesShowThePass() {
    const auto doc = open(grouped_);
    QVERIFY(doc);
    const KeyLabels labels(keysOf(grouped_));
    RunPage runPage(doc->trials());
    QTableWidget* winners = runPage.winnerTable();
    QCOMPARE(winners->rowCount(), 3);
    for (int r = 0; r < winners->rowCount(); ++r) {
      const QTableWidgetItem* shape = winners->item(r, RunPage::ShapeColumn);
      QVERIFY2(shape->text().startsWith(QStringLiteral("pass=")), qPrintable(shape->text()));
      QVERIFY2(shape->toolTip().contains(QStringLiteral("experts=4,tokens=32")), qPrintable(shape->toolTip()));
    }
    QVERIFY(winners->horizontalHeaderItem(RunPage::ShapeColumn)->toolTip().contains(labels.common()));

    TrialsModel* model = doc->trials();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(model->rowCount() > 0);
    for (int r = 0; r < model->rowCount(); ++r)
      QCOMPARE(model->index(r, TrialsModel::ShapeColumn).data().toString(), labels.label(model->trial(r).problem_key));
    TrialsPage trialsPage(model);
    auto* picker = trialsPage.findChild<QComboBox*>();
    QVERIFY(picker);
    QComboBox* shapes = nullptr;
    for (QComboBox* box : trialsPage.findChildren<QComboBox*>())
      if (box->findData(qstr(keysOf(grouped_)[0])) >= 0) shapes = box;
    QVERIFY(shapes);
    for (const std::string& key : keysOf(grouped_)) {
      const int i = shapes->findData(qstr(key));
      QCOMPARE(shapes->itemText(i), labels.label(key));
      QVERIFY(shapes->itemData(i, Qt::ToolTipRole).toString().startsWith(qstr(key)));
    }
    // The Shape column is wide enough for every label, bold (a winner's row) included.
    QTableView* table = trialsPage.findChild<QTableView*>();
    QVERIFY(table);
    QFont bold = table->font();
    bold.setBold(true);
    for (const std::string& key : keysOf(grouped_))
      QVERIFY(table->columnWidth(TrialsModel::ShapeColumn) >= QFontMetrics(bold).horizontalAdvance(labels.label(key)));
    // Picking a shape by its label filters by its whole key.
    shapes->setCurrentIndex(shapes->findText(QStringLiteral("pass=dX")));
    for (int r = 0; r < trialsPage.proxy()->rowCount(); ++r)
      QCOMPARE(TrialsModel::passOf(sstr(trialsPage.proxy()->index(r, 0).data(TrialsModel::ProblemKeyRole).toString())),
               QStringLiteral("dX"));
  }

  // The Apply page tells int8 from fp8, and compares a config a parameter at a time in the run's
  // order although the registry keeps its own.
  void applyPageDiffsConfigsParameterByParameter() {
    const auto doc = open(a8w8_);
    QVERIFY(doc);
    QVERIFY(doc->results());
    const std::vector<ResultEntry>& entries = doc->results()->entries;
    QCOMPARE(entries.size(), std::size_t(2));
    const ResultEntry& int8 = entries[0].problem.field("q_dtype") == "int8" ? entries[0] : entries[1];
    // The registry holds int8's winner with its last parameter changed, in alphabetical order.
    std::vector<std::pair<std::string, ParamValue>> values = int8.config.values();
    const std::string changedName = values.back().first;
    const ParamValue runValue = values.back().second;
    const ParamValue registryValue = runValue.is_string() ? ParamValue(std::string("other")) : ParamValue(999);
    values.back().second = registryValue;
    std::sort(values.begin(), values.end());
    RegistryEntry old;
    old.config = Config(values);
    old.samples_ns.assign(5, int8.stats.median_ns * 2);
    old.latency_avg_ns = old.latency_median_ns = int8.stats.median_ns * 2;
    old.benchmarking_method = doc->results()->method;
    const fs::path root = fs::path(sstr(tmp_.path())) / "tuned_data";
    Registry reg("cpu", doc->results()->device_slug);
    reg.set("gemm_a8w8_blockscale", int8.problem.key(), old);
    const fs::path file = Registry::file_for(root, "cpu", doc->results()->device_slug);
    fs::create_directories(file.parent_path());
    reg.save(file);

    DiffPage page(doc.get());
    page.setRegistryRoot(qstr(root.string()));
    QVERIFY(page.compare());
    const DiffModel& m = *page.model();
    QCOMPARE(m.rowCount(), 2);
    QStringList keys;
    int row = -1;
    for (int r = 0; r < m.rowCount(); ++r) {
      keys << m.index(r, DiffModel::KeyColumn).data().toString();
      if (m.diff().entries[static_cast<std::size_t>(r)].key == int8.problem.key()) row = r;
      QVERIFY(m.index(r, DiffModel::KeyColumn)
                  .data(Qt::ToolTipRole)
                  .toString()
                  .contains(qstr(m.diff().entries[static_cast<std::size_t>(r)].key)));
    }
    keys.sort();
    QCOMPARE(keys, (QStringList{QStringLiteral("q_dtype=fp8_e4m3"), QStringLiteral("q_dtype=int8")}));
    QVERIFY(row >= 0);

    // Both config cells in the run's parameter order; the changed value marked in the run's.
    QStringList runOrder;
    for (const auto& [name, value] : int8.config.values()) runOrder << qstr(name);
    const QString registryCell = m.index(row, DiffModel::OldConfigColumn).data().toString();
    const QString runCell = m.index(row, DiffModel::NewConfigColumn).data().toString();
    QStringList registryNames;
    for (const QString& part : registryCell.split(QStringLiteral(", "))) registryNames << part.section('=', 0, 0);
    QCOMPARE(registryNames, runOrder);
    const QString marked =
        QStringLiteral("%1=%2→%3").arg(qstr(changedName), qstr(registryValue.text()), qstr(runValue.text()));
    QVERIFY2(runCell.endsWith(marked), qPrintable(runCell));
    QCOMPARE(runCell.count(QStringLiteral("→")), 1);

    // The panel beside the table: every parameter a row, in the run's order, the change marked.
    page.table()->setCurrentIndex(m.index(row, DiffModel::KeyColumn));
    const ConfigDiffModel* panel = page.configDiff();
    QAbstractItemModelTester tester(const_cast<ConfigDiffModel*>(panel),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(panel->rowCount(), static_cast<int>(runOrder.size()));
    QCOMPARE(panel->changedCount(), 1);
    for (int r = 0; r < panel->rowCount(); ++r) {
      const bool changed = runOrder[r] == qstr(changedName);
      QCOMPARE(panel->index(r, ConfigDiffModel::ParameterColumn).data().toString(),
               changed ? QStringLiteral("≠ ") + runOrder[r] : runOrder[r]);
      QCOMPARE(panel->index(r, 0).data(ConfigDiffModel::ChangedRole).toBool(), changed);
    }
    const int last = panel->rowCount() - 1;
    QCOMPARE(panel->index(last, ConfigDiffModel::RegistryColumn).data().toString(), qstr(registryValue.text()));
    QCOMPARE(panel->index(last, ConfigDiffModel::RunColumn).data().toString(), qstr(runValue.text()));
    auto* title = page.findChild<QLabel*>();
    QVERIFY(title);
    bool said = false;
    for (QLabel* l : page.findChildren<QLabel*>()) said = said || l->text().contains(QStringLiteral("1 parameter"));
    QVERIFY(said);
    // The fp8 key is new: no registry config, nothing marked.
    page.table()->setCurrentIndex(m.index(1 - row, DiffModel::KeyColumn));
    QCOMPARE(panel->changedCount(), 0);
    QCOMPARE(panel->index(0, ConfigDiffModel::RegistryColumn).data().toString(), QStringLiteral("—"));
    QCOMPARE(m.index(1 - row, DiffModel::NewConfigColumn).data().toString().count(QStringLiteral("→")), 0);
  }

  void configDiffEdges() {
    const Config run({{"MR", 4}, {"order", std::string("row")}, {"threads", 2}});
    // The registry lacks `threads` and has `legacy`: both are changes, the registry-only one last.
    const Config registry({{"MR", 4}, {"legacy", 1}, {"order", std::string("col")}});
    const std::vector<ParameterChange> c = diffConfigs(registry, run);
    QCOMPARE(c.size(), std::size_t(4));
    QCOMPARE(c[0].name, QStringLiteral("MR"));
    QVERIFY(!c[0].changed);
    QVERIFY(c[1].changed);
    QVERIFY(c[2].changed && !c[2].inRegistry);
    QCOMPARE(c[3].name, QStringLiteral("legacy"));
    QVERIFY(c[3].changed && !c[3].inRun);
    QCOMPARE(changesText(c), QStringLiteral("MR=4, order=col→row, threads=2"));
    QCOMPARE(registryText(c), QStringLiteral("MR=4, order=col, legacy=1"));
    QVERIFY(!diffConfigs(std::nullopt, run)[0].changed);
  }

  // The replay's title counts the configs recorded over every shape, not the first shape's.
  void replayTitleCountsEveryShape() {
    const auto backend = ReplayBackend::for_run(paged_, backends_);
    std::set<std::string> recorded;
    for (const Trial& t : RunStore::read_trials(paged_))
      if (t.status != TrialStatus::Pruned) recorded.insert(t.problem_key + "|" + t.config.key());
    const std::size_t first = backend->landscape(keysOf(paged_)[0]).size();
    QVERIFY(recorded.size() > first);
    const QString title = replayTitle(*backend, {"random", 5, 2});
    QVERIFY2(title.contains(QStringLiteral("(%1 configs recorded)").arg(backend->recorded_configs())),
             qPrintable(title));
    QCOMPARE(backend->recorded_configs(), recorded.size());
    QVERIFY(title.contains(QStringLiteral("by random, seed 2")));
  }

  // slow_abort trials ran and validated: a run of ok and slow_abort trials failed nothing.
  void slowAbortIsNotAFailure() {
    const fs::path dir = fs::path(sstr(tmp_.path())) / "no_failures";
    RunMetadata meta;
    meta.run_name = "no_failures";
    meta.family = "gemm";
    meta.backend = "cpu";
    meta.device = fixture::device();
    meta.problems = fixture::problems(1);
    meta.space = fixture::space();
    RunStore store = RunStore::create(dir, meta);
    std::size_t slow = 0;
    for (const Trial& t : fixture::trials(400, meta.problems))
      if (t.status == TrialStatus::Ok || t.status == TrialStatus::SlowAbort) {
        slow += t.status == TrialStatus::SlowAbort;
        store.append(t);
      }
    QVERIFY(slow > 0);
    const auto doc = open(dir);
    QVERIFY(doc);
    RunPage page(doc->trials());
    QCOMPARE(page.statusCount(TrialStatus::SlowAbort), slow);
    QCOMPARE(page.failedCount(), std::uint64_t(0));
  }
};

QTEST_MAIN(TestReadableKeys)
#include "test_readable_keys.moc"
