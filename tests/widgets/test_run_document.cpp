// Opening run folders off the UI thread (a malformed one changes nothing and says why), and
// exports that read back to what the trials table shows.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include <QProgressBar>
#include "ktune/csv.h"
#include "ktune/kernel_tuner_import.h"
#include "ktune/widgets/qt_types.h"

#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/trials_proxy.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

class TestRunDocument : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp_;
  fs::path root_;

  static bool openAndWait(RunDocument& doc, const fs::path& dir, QString* error = nullptr) {
    QSignalSpy opened(&doc, &RunDocument::opened);
    QSignalSpy failed(&doc, &RunDocument::failed);
    doc.open(qstr(dir.string()));
    QElapsedTimer waited;
    waited.start();
    while (opened.isEmpty() && failed.isEmpty() && waited.elapsed() < 30000) QTest::qWait(10);
    if (!failed.isEmpty() && error) *error = failed.first().first().toString();
    return !opened.isEmpty();
  }

  static void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::trunc) << text; }

 private slots:
  void initTestCase() { initialize(); }
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    root_ = fs::path(sstr(tmp_->path()));
  }

  void opensARunOffTheUiThread() {
    const auto trials = fixture::write_run(root_ / "good", 3000, 3);
    RunDocument doc;
    QVERIFY(openAndWait(doc, root_ / "good"));
    QCOMPARE(doc.trials()->rowCount(), 3000);
    QCOMPARE(doc.trials()->trial(1234).config, trials[1234].config);
    QCOMPARE(doc.trials()->trial(1234).samples_ns, trials[1234].samples_ns);
    QVERIFY(doc.results().has_value());
    QCOMPARE(doc.results()->entries.size(), std::size_t(3));
    QCOMPARE(doc.metadata()->run_name, std::string("good"));
    QVERIFY(!doc.canResume());
  }

  // A Kernel Tuner cache, imported, opens like any run: every config, its metrics, its best.
  void opensAnImportedKernelTunerCache() {
    const KernelTunerCache cache =
        read_kernel_tuner_cache(fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / "kernel_tuner_matmul_cache.json");
    write_imported_run(root_ / "kt", cache);
    RunDocument doc;
    QString error;
    QVERIFY2(openAndWait(doc, root_ / "kt", &error), qPrintable(error));
    QCOMPARE(doc.trials()->rowCount(), static_cast<int>(cache.trials.size()));
    QCOMPARE(doc.trials()->trial(100).metrics, cache.trials[100].metrics);
    QVERIFY(doc.results().has_value());
    QCOMPARE(doc.results()->entries.size(), std::size_t(1));
    QCOMPARE(doc.metadata()->device.name, std::string("NVIDIA H100 80GB HBM3"));
  }

  void unfinishedRunCanBeResumed() {
    fixture::write_run(root_ / "killed", 500, 2, /*finished=*/false);
    // A torn last line, as a kill mid-write leaves it, is dropped.
    std::ofstream(root_ / "killed" / "trials.csv", std::ios::app) << "500,\"M=16,N=5";
    RunDocument doc;
    QVERIFY(openAndWait(doc, root_ / "killed"));
    QCOMPARE(doc.trials()->rowCount(), 500);
    QVERIFY(!doc.results());
    QVERIFY(doc.canResume());
  }

  void reopenedRunCountsConfigsToMeasure() {
    // A run with the compact pruning record: 3 of 6 configs pruned, 3 to measure, 1 measured.
    RunMetadata meta;
    meta.run_name = "compact";
    meta.family = "gemm";
    meta.backend = "cpu";
    meta.device = fixture::device();
    meta.problems = fixture::problems(1);
    meta.space = SearchSpace({{"BM", {16, 32, 64}, ""}, {"BN", {16, 32}, ""}}, {{"BM * BN <= 512", ""}});
    ProblemPruning pruning;
    pruning.problem = meta.problems[0].key();
    pruning.report = meta.space.prune_report({});
    pruning.planned = pruning.report.valid;
    meta.pruning = {pruning};
    {
      RunStore store = RunStore::create(root_ / "compact", meta);
      Trial t;
      t.id = 0;
      t.problem_key = pruning.problem;
      t.config = Config({{"BM", 16}, {"BN", 16}});
      t.status = TrialStatus::Ok;
      t.samples_ns = {100, 101, 102};
      t.stats = summarize(t.samples_ns);
      store.append(t);
    }
    RunDocument doc;
    QVERIFY(openAndWait(doc, root_ / "compact"));
    RunPage page(doc.trials());
    QCOMPARE(doc.trials()->rowCount(), 1);
    QCOMPARE(page.measuredCount(), std::uint64_t(1));
    QCOMPARE(page.statusCount(TrialStatus::Pruned), std::uint64_t(3));
    QCOMPARE(page.findChild<QProgressBar*>()->maximum(), 3);
    QCOMPARE(page.findChild<QProgressBar*>()->value(), 1);
    // Listing the pruned configs re-enumerates them from the space; the counts stay.
    TrialsPage trials(doc.trials());
    trials.setStatusFilter({TrialStatus::Pruned});
    QCOMPARE(trials.proxy()->rowCount(), 3);
    QCOMPARE(doc.trials()->trial(1).status, TrialStatus::Pruned);
    QCOMPARE(doc.trials()->trial(1).config.key(), std::string("BM=32,BN=32"));
    QCOMPARE(page.measuredCount(), std::uint64_t(1));
    QCOMPARE(page.statusCount(TrialStatus::Pruned), std::uint64_t(3));
    QVERIFY(doc.canResume());
  }

  void malformedFolderShowsErrorAndChangesNothing() {
    fixture::write_run(root_ / "good", 800, 2);
    RunDocument doc;
    QVERIFY(openAndWait(doc, root_ / "good"));
    const auto before = doc.trials()->trials();
    const auto beforeName = doc.metadata()->run_name;

    // Cases: not a folder, no metadata, metadata not JSON, trials.csv with a bad row.
    fs::create_directories(root_ / "empty");
    fs::create_directories(root_ / "badjson");
    write(root_ / "badjson" / "run_metadata.json", "{ \"run_name\": ");
    fixture::write_run(root_ / "badrow", 100, 1);
    {
      std::ifstream in(root_ / "badrow" / "trials.csv");
      std::string text((std::istreambuf_iterator<char>(in)), {});
      const auto line2 = text.find('\n', text.find('\n') + 1);
      text.insert(line2 + 1, "oops,not,a,trial\n");
      write(root_ / "badrow" / "trials.csv", text);
    }
    const std::pair<fs::path, QString> cases[] = {{root_ / "missing", QStringLiteral("not a folder")},
                                                  {root_ / "empty", QStringLiteral("run_metadata.json")},
                                                  {root_ / "badjson", QStringLiteral("run_metadata.json")},
                                                  {root_ / "badrow", QStringLiteral("trials.csv")}};
    QSignalSpy reset(doc.trials(), &QAbstractItemModel::modelReset);
    QSignalSpy results(&doc, &RunDocument::resultsChanged);
    for (const auto& [dir, culprit] : cases) {
      QString error;
      QVERIFY2(!openAndWait(doc, dir, &error), dir.c_str());
      QVERIFY2(error.contains(culprit), qPrintable(error));
      QVERIFY2(error.contains(qstr(dir.filename().string())), qPrintable(error));
    }
    QCOMPARE(reset.count(), 0);
    QCOMPARE(results.count(), 0);
    QCOMPARE(doc.trials()->rowCount(), static_cast<int>(before.size()));
    QCOMPARE(doc.metadata()->run_name, beforeName);
    QCOMPARE(doc.dir(), root_ / "good");
  }

  void exportsRoundTrip() {
    fixture::write_run(root_ / "run", 1200, 2);
    RunDocument doc;
    QVERIFY(openAndWait(doc, root_ / "run"));
    const TrialsModel& model = *doc.trials();

    const QString jsonFile = qstr((root_ / "out" / "run.json").string());
    const QString csvFile = qstr((root_ / "out" / "trials.csv").string());
    fs::create_directories(root_ / "out");
    for (const auto& [format, file] : {std::pair{RunDocument::ExportFormat::RunJson, jsonFile},
                                       std::pair{RunDocument::ExportFormat::TrialsCsv, csvFile}}) {
      QSignalSpy exported(&doc, &RunDocument::exported);
      doc.exportTo(format, file);
      QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 30000);
      QCOMPARE(exported.first().first().toString(), file);
    }

    std::ifstream in(sstr(jsonFile));
    const nlohmann::json j = nlohmann::json::parse(in);
    QCOMPARE(j.at("trials").size(), std::size_t(model.rowCount()));
    QCOMPARE(RunMetadata::from_json(j.at("metadata")).run_name, std::string("run"));
    QVERIFY(j.at("results").is_object());
    for (int row : {0, 17, 1199}) {
      const Trial& t = model.trial(row);
      const nlohmann::json& jt = j.at("trials").at(static_cast<std::size_t>(row));
      QCOMPARE(jt.at("id").get<std::int64_t>(), t.id);
      QCOMPARE(jt.at("status").get<std::string>(), std::string(to_string(t.status)));
      // JSON objects do not keep key order; compare the values by name.
      const auto byName = [](const Config& c) {
        return std::map<std::string, ParamValue>(c.values().begin(), c.values().end());
      };
      QCOMPARE(byName(Config::from_json(jt.at("config"))), byName(t.config));
    }

    std::ifstream csvIn(sstr(csvFile));
    const std::string text((std::istreambuf_iterator<char>(csvIn)), {});
    const auto records = csv::parse(text, sstr(csvFile));
    QCOMPARE(records.size(), std::size_t(model.rowCount() + 1));
    const auto& header = records.front().fields;
    const auto column = [&](const std::string& name) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    QVERIFY(column("config") < header.size() && column("median_ns") < header.size() &&
            column("status") < header.size());
    for (int row = 0; row < model.rowCount(); ++row) {
      const Trial& t = model.trial(row);
      const auto& f = records[static_cast<std::size_t>(row) + 1].fields;
      QCOMPARE(f[column("config")], t.config.key());
      QCOMPARE(f[column("status")], std::string(to_string(t.status)));
      if (t.stats.count) QCOMPARE(std::stod(f[column("median_ns")]), t.stats.median_ns);
    }

    // A file that cannot be written is reported, not thrown.
    QSignalSpy failed(&doc, &RunDocument::failed);
    doc.exportTo(RunDocument::ExportFormat::RunJson, qstr((root_ / "no" / "such" / "dir" / "x.json").string()));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    QVERIFY(failed.first().first().toString().contains(QStringLiteral("x.json")));
  }
};

QTEST_MAIN(TestRunDocument)
#include "test_run_document.moc"
