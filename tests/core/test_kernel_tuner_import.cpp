// Kernel Tuner cache files as ktune runs: closed and still-being-written files, failure markers,
// samples in order, extra metrics kept, and bad files named with their field.
#include <zlib.h>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernel_tuner_fixture.h"
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

// `text` as gzip writes it.
std::string gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The sparse cache's recorded configs by Kernel Tuner key, and the product of its tune_params.
struct Sparse {
  test::SparseCache cache = test::sparse_kernel_tuner_cache(80);
  std::vector<std::vector<std::int64_t>> space;  // every config of the product, values in key order
  Sparse() {
    space.push_back({});
    for (const auto& [name, values] : cache.json["tune_params"].items()) {
      std::vector<std::vector<std::int64_t>> next;
      for (const auto& c : space)
        for (const auto& v : values) {
          next.push_back(c);
          next.back().push_back(v.get<std::int64_t>());
        }
      space = std::move(next);
    }
  }
  fs::path file(const QTemporaryDir& tmp) const {
    const fs::path f = fs::path(tmp.path().toStdString()) / "sparse.json";
    write(f, test::kernel_tuner_text(cache.json, true));
    return f;
  }
};

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

  // The restrictions make the run's space the one Kernel Tuner searched: its size under them, the
  // share the cache covers, and the recorded configs that break them, counted by brute force here.
  void restrictionsGiveTheSpaceAndItsCoverage() {
    QTemporaryDir tmp;
    const Sparse sparse;
    // block_size_x * block_size_y >= 64, tile_size_x <= 4, as Kernel Tuner's restrictions would be.
    auto holds = [](const std::vector<std::int64_t>& v) { return v[0] * v[1] >= 64 && v[2] <= 4; };
    std::uint64_t valid = 0;
    for (const auto& c : sparse.space) valid += holds(c);
    std::size_t in_space = 0, violating = 0, invalid_outside = 0;
    for (const auto& [key, rec] : sparse.cache.json["cache"].items()) {
      std::vector<std::int64_t> v;
      for (const auto& name : sparse.cache.json["tune_params_keys"]) v.push_back(rec[name.get<std::string>()]);
      if (holds(v))
        ++in_space;
      else
        ++(rec["time"] == "InvalidConfig" ? invalid_outside : violating);
    }
    QVERIFY(violating > 0 && invalid_outside > 0 && in_space > 0);

    KernelTunerRestrictions r;
    r.constraints = {{"block_size_x * block_size_y >= 64", ""}, {"tile_size_x <= 4", ""}};
    const KernelTunerCache c = read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r);
    QCOMPARE(c.coverage.space_total, sparse.cache.space_size);
    QCOMPARE(c.coverage.space_valid, std::optional<std::uint64_t>(valid));
    QCOMPARE(c.coverage.in_space, std::uint64_t(in_space));
    QCOMPARE(c.coverage.violating.size(), violating);
    QCOMPARE(c.coverage.invalid_outside.size(), invalid_outside);
    QCOMPARE(c.outside_space.size(), violating + invalid_outside);
    QVERIFY2(
        contains(c.coverage.violating.front(), "cache[\"") && contains(c.coverage.violating.front(), "\"]: pruned by "),
        c.coverage.violating.front().c_str());
    QCOMPARE(c.trials.size(), sparse.cache.json["cache"].size());  // the violating ones stay, as measured
    QCOMPARE(c.metadata.space.constraints(), r.constraints);
    QCOMPARE(c.metadata.pruning.size(), std::size_t(1));
    QCOMPARE(c.metadata.pruning[0].report.valid, valid);

    // The best is the fastest config the space holds, never a violating one.
    const Trial* best = nullptr;
    for (const auto& t : c.trials)
      if (t.status == TrialStatus::Ok && !c.outside_space.count(t.id) &&
          (!best || t.stats.median_ns < best->stats.median_ns))
        best = &t;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "restricted";
    write_imported_run(dir, c);
    const RunResults results = RunStore::read_results(dir);
    QCOMPARE(results.entries.at(0).config, best->config);
    QCOMPARE(RunStore::read_metadata(dir).space, c.metadata.space);
  }

  // Without restrictions the space is the product, covered by what was recorded; every recorded
  // config is in it.
  void withoutRestrictionsTheSpaceIsTheProduct() {
    QTemporaryDir tmp;
    const Sparse sparse;
    const KernelTunerCache c = read_kernel_tuner_cache(sparse.file(tmp));
    QCOMPARE(c.coverage.space_total, sparse.cache.space_size);
    QCOMPARE(c.coverage.space_valid, std::optional<std::uint64_t>(sparse.cache.space_size));
    QCOMPARE(c.coverage.in_space, std::uint64_t(80));
    QVERIFY(c.coverage.violating.empty() && c.outside_space.empty() && c.metadata.pruning.empty());
  }

  // A space file as for `ktune tune --space`: narrowed candidates and its own constraints, to
  // which --constraint adds; a recorded value outside its candidates is named.
  void spaceFileNarrowsTheSpace() {
    QTemporaryDir tmp;
    const Sparse sparse;
    nlohmann::ordered_json space;
    space["parameters"] = sparse.cache.json["tune_params"];
    space["parameters"]["block_size_x"] = {16, 32, 64, 128};  // no 256
    space["constraints"] = {"block_size_y <= 16"};
    const fs::path file = fs::path(tmp.path().toStdString()) / "space.json";
    write(file, space.dump());
    KernelTunerRestrictions r;
    r.space = SearchSpace::load(file);
    r.constraints = {{"use_shared_mem == 1", ""}};
    const KernelTunerCache c = read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r);
    QCOMPARE(c.coverage.space_total, std::uint64_t(4 * 6 * 4 * 4 * 4 * 2));
    QCOMPARE(c.coverage.space_valid, std::optional<std::uint64_t>(4 * 5 * 4 * 4 * 4 * 1));
    QCOMPARE(c.metadata.space.constraints().size(), std::size_t(2));
    bool named = false;
    for (const auto& v : c.coverage.violating)
      named = named || contains(v, "block_size_x=256 is not one of the space's candidates");
    QVERIFY(named);

    space["parameters"].erase("use_shared_mem");
    space["parameters"]["unroll"] = {1, 2};
    write(file, space.dump());
    r.space = SearchSpace::load(file);
    const std::string e = input_error_of([&] { read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r); });
    QVERIFY2(contains(e, "unroll") && contains(e, "tune_params_keys: block_size_x") && contains(e, "use_shared_mem"),
             e.c_str());
  }

  void badRestrictionsAreNamed() {
    QTemporaryDir tmp;
    const Sparse sparse;
    KernelTunerRestrictions r;
    r.constraints = {{"block_size_z > 1", ""}};
    std::string e = input_error_of([&] { read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r); });
    QVERIFY2(contains(e, "restriction 'block_size_z > 1'") && contains(e, "unknown variable 'block_size_z'"),
             e.c_str());
    r.constraints = {{"block_size_x > 1000", ""}};
    e = input_error_of([&] { read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r); });
    QVERIFY2(contains(e, "all 3840 configs are pruned") && contains(e, "block_size_x > 1000"), e.c_str());
    // The problem's fields are variables of a restriction (problem_size [2048, 2048]: x, y).
    r.constraints = {{"block_size_x * tile_size_x <= x / 8", ""}};
    QVERIFY(read_kernel_tuner_cache(sparse.file(tmp), {}, "cuda", r).coverage.space_valid.value() > 0);
  }

  // A gzip-compressed cache reads as the file it holds, closed or still being written; a cut one,
  // or one that would decompress past the file limit, is named as such.
  void gzipCompressedCachesRead() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    const Sparse sparse;
    for (const bool closed : {true, false}) {
      const std::string text = test::kernel_tuner_text(sparse.cache.json, closed);
      write(dir / "plain.json", text);
      write(dir / "packed.json.gz", gzip(text));
      const KernelTunerCache plain = read_kernel_tuner_cache(dir / "plain.json");
      const KernelTunerCache packed = read_kernel_tuner_cache(dir / "packed.json.gz");
      QCOMPARE(packed.trials.size(), plain.trials.size());
      for (std::size_t i = 0; i < plain.trials.size(); ++i) {
        QCOMPARE(packed.trials[i].config, plain.trials[i].config);
        QCOMPARE(packed.trials[i].samples_ns, plain.trials[i].samples_ns);
      }
    }
    const std::string packed = gzip(test::kernel_tuner_text(sparse.cache.json, true));
    write(dir / "cut.json.gz", packed.substr(0, packed.size() / 2));
    std::string e = input_error_of([&] { read_kernel_tuner_cache(dir / "cut.json.gz"); });
    QVERIFY2(contains(e, "cut.json.gz: the gzip-compressed file ends before its data does"), e.c_str());
    QVERIFY(!contains(e, "still being written"));
    std::string corrupt = packed;
    for (std::size_t i = 20; i < 40; ++i) corrupt[i] = static_cast<char>(~corrupt[i]);
    write(dir / "corrupt.json.gz", corrupt);
    e = input_error_of([&] { read_kernel_tuner_cache(dir / "corrupt.json.gz"); });
    QVERIFY2(contains(e, "corrupt.json.gz: not readable gzip data"), e.c_str());

    // 3 MiB of spaces compress to a few KiB: the limit holds for what the file holds.
    write(dir / "large.json.gz", gzip(std::string(3 << 20, ' ') + test::kernel_tuner_text(sparse.cache.json, true)));
    setenv(kMaxFileEnv, "1", 1);
    e = input_error_of([&] { read_kernel_tuner_cache(dir / "large.json.gz"); });
    unsetenv(kMaxFileEnv);
    QVERIFY2(contains(e, "large.json.gz: decompresses to more than 1 MiB") && contains(e, kMaxFileEnv), e.c_str());
    QCOMPARE(read_kernel_tuner_cache(dir / "large.json.gz").trials.size(), std::size_t(80));
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
