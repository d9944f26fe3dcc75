// Kernel Tuner cache files as ktune runs: closed and still-being-written files, failure markers,
// samples in order, extra metrics kept, and bad files named with their field.
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ktune/files.h"
#include "ktune/kernel_tuner_import.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(KTUNE_SOURCE_DIR) / "tests" / "data";
const fs::path kClosed = kData / "kernel_tuner_matmul_cache.json";
const fs::path kLive = kData / "kernel_tuner_matmul_cache_live.json";

std::size_t count(const KernelTunerCache& c, TrialStatus s) {
  return static_cast<std::size_t>(
      std::count_if(c.trials.begin(), c.trials.end(), [&](const Trial& t) { return t.status == s; }));
}

void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

}  // namespace

class TestKernelTunerImport : public QObject {
  Q_OBJECT
 private slots:
  void closedFileKeepsEveryEntryInOrder() {
    const nlohmann::ordered_json raw = nlohmann::ordered_json::parse(read_text_file(kClosed));
    const KernelTunerCache c = read_kernel_tuner_cache(kClosed);
    QCOMPARE(c.trials.size(), raw["cache"].size());
    QCOMPARE(c.metadata.family, std::string("matmul_kernel"));
    QCOMPARE(c.metadata.device.name, std::string("NVIDIA H100 80GB HBM3"));
    QCOMPARE(c.metadata.problems.front().key(), std::string("x=4096,y=4096"));
    QCOMPARE(c.metadata.space.parameters().size(), std::size_t(4));
    QCOMPARE(c.metadata.space.total_size(), std::uint64_t(240));
    std::size_t i = 0;
    for (const auto& [key, rec] : raw["cache"].items()) {
      const Trial& t = c.trials[i];
      QCOMPARE(t.id, std::int64_t(i));
      QCOMPARE(t.config.get("block_size_x"), rec["block_size_x"].get<std::int64_t>());
      QCOMPARE(t.config.get("tile_size_y"), rec["tile_size_y"].get<std::int64_t>());
      if (rec["time"].is_number()) {
        QCOMPARE(t.status, TrialStatus::Ok);
        QCOMPARE(t.samples_ns.size(), rec["times"].size());
        for (std::size_t s = 0; s < t.samples_ns.size(); ++s)
          QCOMPARE(t.samples_ns[s], rec["times"][s].get<double>() * 1e6);
        QCOMPARE(t.metrics.at("GFLOP/s"), rec["GFLOP/s"].get<double>());
        QCOMPARE(t.metrics.at("energy"), rec["energy"].get<double>());
        QCOMPARE(t.metrics.at("power"), rec["power"].get<double>());
        QCOMPARE(t.compile_time_s, rec["compile_time"].get<double>() / 1e3);
        QVERIFY(!t.metrics.count("benchmark_time"));  // Kernel Tuner's bookkeeping, not a metric
        QVERIFY(!t.metrics.count("block_size_x"));
      }
      ++i;
    }
  }

  void failureMarkersBecomeStatuses() {
    const KernelTunerCache c = read_kernel_tuner_cache(kClosed);
    const std::string text = read_text_file(kClosed);
    auto occurrences = [&](const std::string& marker) {
      std::size_t n = 0;
      for (auto p = text.find('"' + marker + '"'); p != std::string::npos; p = text.find('"' + marker + '"', p + 1))
        ++n;
      return n;
    };
    QCOMPARE(count(c, TrialStatus::Pruned), occurrences("InvalidConfig"));
    QCOMPARE(count(c, TrialStatus::CompileError), occurrences("CompilationFailedConfig"));
    QCOMPARE(count(c, TrialStatus::LaunchError), occurrences("RuntimeFailedConfig"));
    QVERIFY(count(c, TrialStatus::Pruned) > 0 && count(c, TrialStatus::CompileError) > 0);
    for (const auto& t : c.trials)
      if (t.status == TrialStatus::CompileError) {
        QVERIFY(contains(t.error, "CompilationFailedConfig"));
        QVERIFY(t.samples_ns.empty());
      }
  }

  void liveFileReadsAsItsEntriesSoFar() {
    const std::string live = read_text_file(kLive);
    QVERIFY(live.back() == ',');  // as Kernel Tuner leaves it while it runs
    const KernelTunerCache partial = read_kernel_tuner_cache(kLive);
    const KernelTunerCache full = read_kernel_tuner_cache(kClosed);
    QCOMPARE(partial.trials.size(), std::size_t(50));
    for (std::size_t i = 0; i < partial.trials.size(); ++i) {
      QCOMPARE(partial.trials[i].config, full.trials[i].config);
      QCOMPARE(partial.trials[i].samples_ns, full.trials[i].samples_ns);
    }
    // The header alone (Kernel Tuner has measured nothing yet) has nothing to import.
    QTemporaryDir tmp;
    const fs::path header = fs::path(tmp.path().toStdString()) / "header.json";
    write(header, live.substr(0, live.find("\"cache\": {") + 10));
    QVERIFY(contains(input_error_of([&] { read_kernel_tuner_cache(header); }), "no configs measured yet"));
  }

  void malformedFilesNameTheProblem() {
    QTemporaryDir tmp;
    const fs::path bad = fs::path(tmp.path().toStdString()) / "bad.json";
    write(bad, "{\"device_name\": \"x\", \"kernel_name\": ");
    std::string e = input_error_of([&] { read_kernel_tuner_cache(bad); });
    QVERIFY2(contains(e, bad.string()) && contains(e, "not valid JSON"), e.c_str());

    std::string text = read_text_file(kClosed);
    write(bad, std::string(text).replace(text.find("\"tune_params\""), 13, "\"tune_paramz\""));
    e = input_error_of([&] { read_kernel_tuner_cache(bad); });
    QVERIFY2(contains(e, "missing field \"tune_params\""), e.c_str());

    write(bad, std::string(text).replace(text.find("\"InvalidConfig\""), 15, "\"SomethingElse\""));
    e = input_error_of([&] { read_kernel_tuner_cache(bad); });
    QVERIFY2(contains(e, "cache[\"16,1,1,1\"].time") && contains(e, "failure marker"), e.c_str());

    write(bad, std::string(text).replace(text.find("\"problem_size\": [\n4096"), 22, "\"problem_size\": [\n\"a,b\""));
    e = input_error_of([&] { read_kernel_tuner_cache(bad); });
    QVERIFY2(contains(e, "problem_size: \"a,b\" is neither an integer"), e.c_str());

    write(bad, std::string(text).replace(text.find("\"block_size_x\": [\n16"), 20, "\"block_size_x\": [\n1.5"));
    e = input_error_of([&] { read_kernel_tuner_cache(bad); });
    QVERIFY2(contains(e, "tune_params[\"block_size_x\"]") && contains(e, "not an integer"), e.c_str());
  }

  void importedRunReadsBackWithMetricsAndBest() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "kt";
    const KernelTunerCache c = read_kernel_tuner_cache(kClosed, "matmul");
    write_imported_run(dir, c);
    const std::vector<Trial> back = RunStore::read_trials(dir);
    QCOMPARE(back.size(), c.trials.size());
    const Trial* best = nullptr;
    for (std::size_t i = 0; i < back.size(); ++i) {
      QCOMPARE(back[i].status, c.trials[i].status);
      QCOMPARE(back[i].metrics, c.trials[i].metrics);
      QCOMPARE(back[i].samples_ns, c.trials[i].samples_ns);
      if (back[i].status == TrialStatus::Ok && (!best || back[i].stats.median_ns < best->stats.median_ns))
        best = &back[i];
    }
    const RunResults r = RunStore::read_results(dir);
    QCOMPARE(r.family, std::string("matmul"));
    QCOMPARE(r.entries.size(), std::size_t(1));
    QCOMPARE(r.entries[0].config, best->config);
    QCOMPARE(r.entries[0].stats.median_ns, best->stats.median_ns);
    QVERIFY(contains(export_trials_csv(dir), "GFLOP/s"));
    QVERIFY(contains(input_error_of([&] { write_imported_run(dir, c); }), "already holds a run"));
  }

  // Kernel Tuner keeps what its timer returned; an entry whose time is no time is left out, with
  // its key and time, and cannot become the best.
  void entriesWithTimesThatAreNoTimesAreSkipped() {
    nlohmann::ordered_json raw = nlohmann::ordered_json::parse(read_text_file(kClosed));
    std::vector<std::string> spoiled;
    for (auto& [key, rec] : raw["cache"].items()) {
      if (!rec["time"].is_number() || spoiled.size() == 2) continue;
      if (spoiled.empty()) {
        rec["times"][1] = -0.25;  // one sample of several
      } else {
        rec.erase("times");
        rec["time"] = 0;
      }
      spoiled.push_back(key);
    }
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "negative.json";
    write(file, raw.dump());
    const KernelTunerCache c = read_kernel_tuner_cache(file);
    QCOMPARE(c.trials.size(), raw["cache"].size() - 2);
    QCOMPARE(c.skipped.size(), std::size_t(2));
    QVERIFY2(contains(c.skipped[0], "cache[\"" + spoiled[0] + "\"]: time -0.25 ms"), c.skipped[0].c_str());
    QVERIFY2(contains(c.skipped[1], "cache[\"" + spoiled[1] + "\"]: time 0 ms"), c.skipped[1].c_str());
    for (const auto& t : c.trials)
      for (double ns : t.samples_ns) QVERIFY(ns > 0);
  }

  // Runs written before the metrics column still read (and their trials have no metrics).
  void trialsWithoutMetricsColumnStillRead() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "kt";
    write_imported_run(dir, read_kernel_tuner_cache(kLive));
    std::string csv = read_text_file(dir / "trials.csv");
    std::string old;
    for (std::size_t start = 0; start < csv.size();) {  // drop the last field of each line
      const std::size_t end = csv.find('\n', start);
      const std::string line = csv.substr(start, end - start);
      const std::size_t cut = line.back() == '"' ? line.rfind(",\"{") : line.rfind(',');
      old += line.substr(0, cut) + "\n";
      start = end + 1;
    }
    QVERIFY(!contains(old, "metrics"));
    write(dir / "trials.csv", old);
    const auto trials = RunStore::read_trials(dir);
    QCOMPARE(trials.size(), std::size_t(50));
    for (const auto& t : trials) QVERIFY(t.metrics.empty());
    QCOMPARE(trials.back().samples_ns, read_kernel_tuner_cache(kLive).trials.back().samples_ns);
  }
};

QTEST_GUILESS_MAIN(TestKernelTunerImport)
#include "test_kernel_tuner_import.moc"
