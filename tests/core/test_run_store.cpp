// RunStore on real files: CSV quoting, exact trial round trips, torn and malformed rows, refusing
// to clobber a run, resume checks, results.json, exports and atomic writes.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>

#include "ktune/csv.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "ktune/version.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

Problem gemm_problem(const std::string& m) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", m}, {"N", "64"}, {"K", "32"}, {"dtype", "f32"}};
  return p;
}

// Every setting away from its default, so a field that is not written or read back shows.
RunMetadata sample_metadata() {
  RunMetadata m;
  m.run_name = "gemm_test";
  m.family = "gemm";
  m.backend = "cpu";
  m.device.backend = "cpu";
  m.device.name = "Test CPU 9000";
  m.device.properties = {{"cores", 2}, {"l2_bytes", 1048576}};
  m.device.text = {{"isa", "avx2"}};
  m.arguments = {"ktune", "tune", "gemm", "--shape", "M=16,32 N=64 K=32"};
  m.working_directory = "/home/someone/ktune";
  Problem sharded = gemm_problem("32");
  sharded.tp_size = 2;
  sharded.tp_split_dim = TpSplitDim::Out;
  m.problems = {gemm_problem("16"), sharded};
  m.space = SearchSpace({{"BM", {16, 32}, "rows per tile"}, {"BK", {8, 16}, "depth per tile"}},
                        {{"BM*BK <= 256", "tile fits"}});
  m.strategy = {"random", 10, 7};
  m.measure.method = Method::PerLaunch;
  m.measure.noise_target = 0.005;
  m.measure.min_samples = 7;
  m.measure.max_samples = 77;
  m.measure.warmup_ms = 3.5;
  m.measure.min_sample_ms = 0.25;
  m.measure.max_ms_per_config = 999;
  m.measure.slow_abort = false;
  m.measure.slow_abort_margin = 0.5;
  m.measure.rotate_buffers = true;
  m.tolerance = {1e-3, 2e-3, 0.01};
  m.seed = 42;
  m.ktune_version = version();
  m.versions = {{"compiler", "g++ 12.2"}, {"blas", "OpenBLAS 0.3.21"}};
  m.started_at = now_iso8601();
  return m;
}

// Random full-mantissa values, with the awkward ones first (subnormal, huge, not representable
// in decimal) when `extremes`; the huge one makes the mean overflow, so not for stats checks.
std::vector<double> awkward_samples(std::uint64_t seed, std::size_t n, bool extremes = true) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(1000.0, 50000.0);
  std::vector<double> s;
  if (extremes) s = {0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, 12345.678901234567};
  while (s.size() < n) s.push_back(dist(rng));
  return s;
}

Trial ok_trial(std::int64_t id, const std::string& problem, ParamValue bm, ParamValue bk, std::vector<double> samples) {
  Trial t;
  t.id = id;
  t.problem_key = problem;
  t.config = Config({{"BM", bm}, {"BK", bk}});
  t.status = TrialStatus::Ok;
  t.stats = summarize(samples);
  t.samples_ns = std::move(samples);
  t.compile_time_s = 0.123456789012345;
  t.max_abs_error = 1e-7 / 3;
  t.mismatch_fraction = 0;
  t.tflops = 2.0 / 3.0;
  t.gbps = 123.456789;
  t.started_at_s = id * 0.1;
  return t;
}

Trial failed_trial(std::int64_t id, const std::string& problem, TrialStatus status, std::string error) {
  Trial t;
  t.id = id;
  t.problem_key = problem;
  t.config = Config({{"BM", 32}, {"BK", 16}});
  t.status = status;
  t.error = std::move(error);
  return t;
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

void compare_trials(const Trial& got, const Trial& want) {
  QCOMPARE(got.id, want.id);
  QCOMPARE(got.problem_key, want.problem_key);
  QVERIFY(got.config == want.config);
  QCOMPARE(to_string(got.status), to_string(want.status));
  QCOMPARE(got.error, want.error);
  QCOMPARE(got.stats.count, want.stats.count);
  for (auto [g, w] : {std::pair{got.stats.median_ns, want.stats.median_ns},
                      {got.stats.mean_ns, want.stats.mean_ns},
                      {got.stats.std_ns, want.stats.std_ns},
                      {got.stats.min_ns, want.stats.min_ns},
                      {got.stats.max_ns, want.stats.max_ns},
                      {got.compile_time_s, want.compile_time_s},
                      {got.tflops, want.tflops},
                      {got.gbps, want.gbps},
                      {got.max_abs_error, want.max_abs_error},
                      {got.mismatch_fraction, want.mismatch_fraction},
                      {got.started_at_s, want.started_at_s}})
    QCOMPARE(bits(g), bits(w));
  QCOMPARE(got.samples_ns.size(), want.samples_ns.size());
  for (std::size_t i = 0; i < got.samples_ns.size(); ++i) QCOMPARE(bits(got.samples_ns[i]), bits(want.samples_ns[i]));
}

std::string read_file(const fs::path& p) { return read_text_file(p); }

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> folder_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The key of gemm_problem("16"), the first problem of sample_metadata().
const std::string kKey = "M=16,N=64,K=32,dtype=f32";

}  // namespace

class TestRunStore : public QObject {
  Q_OBJECT

 private slots:
  void csvQuotingRoundTrip() {
    const std::vector<std::string> fields = {
        "plain", "with,comma", "with \"quotes\"", "two\nline\r\nbreaks", "", " spaced ", "\"", ",,"};
    QCOMPARE(csv::quote("plain"), std::string("plain"));
    QCOMPARE(csv::quote("a,b"), std::string("\"a,b\""));
    QCOMPARE(csv::quote("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
    const std::string text = csv::format_record(fields) + csv::format_record({"next"});
    const auto records = csv::parse(text, "mem.csv");
    QCOMPARE(records.size(), std::size_t(2));
    QVERIFY(records[0].fields == fields);
    QVERIFY(records[0].complete && records[1].complete);
    QCOMPARE(records[0].line, std::size_t(1));
    QCOMPARE(records[1].line, std::size_t(4));  // the first record spans three lines
    QCOMPARE(records[1].fields, std::vector<std::string>{"next"});

    // CRLF line ends (RFC 4180's own) read the same.
    const auto crlf = csv::parse("a,b\r\n\"c\r\nd\",e\r\n", "crlf.csv");
    QCOMPARE(crlf.size(), std::size_t(2));
    QCOMPARE(crlf[0].fields, (std::vector<std::string>{"a", "b"}));
    QCOMPARE(crlf[1].fields, (std::vector<std::string>{"c\r\nd", "e"}));
  }

  void csvMalformedAndIncomplete() {
    QVERIFY(contains(input_error_of([] { csv::parse("a,b\"c\n", "x.csv"); }), "x.csv:1:"));
    QVERIFY(contains(input_error_of([] { csv::parse("ok\n\"a\"b,c\n", "x.csv"); }), "x.csv:2:"));
    const auto records = csv::parse("a,b\nc,\"d\ne", "x.csv");
    QCOMPARE(records.size(), std::size_t(2));
    QVERIFY(records[0].complete);
    QVERIFY(!records[1].complete);
    QCOMPARE(records[1].offset, std::size_t(4));
  }

  void metadataRoundTrip() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    const RunMetadata m = sample_metadata();
    RunStore::create(dir, m);
    const RunMetadata back = RunStore::read_metadata(dir);
    QVERIFY2(back.to_json() == m.to_json(), back.to_json().dump(1).c_str());
    QVERIFY(back.space == m.space);
    QVERIFY(back.problems == m.problems);
    QVERIFY(back.versions == m.versions);

    // The settings are spelled out by name, for people and other tools reading the file.
    const auto j = nlohmann::json::parse(read_file(dir / "run_metadata.json"));
    QCOMPARE(j["measure"]["method"].get<std::string>(), std::string("per_launch"));
    QCOMPARE(j["measure"]["noise_target"].get<double>(), 0.005);
    QCOMPARE(j["measure"]["rotate_buffers"].get<bool>(), true);
    QCOMPARE(j["tolerance"]["max_mismatch_fraction"].get<double>(), 0.01);
    QCOMPARE(j["device"]["name"].get<std::string>(), std::string("Test CPU 9000"));
    QCOMPARE(j["state"].get<std::string>(), std::string("running"));
    QCOMPARE(read_file(dir / "trials.csv"),
             std::string("id,problem,status,BM,BK,median_ns,mean_ns,std_ns,min_ns,max_ns,count,compile_time_s,tflops,"
                         "gbps,max_abs_error,mismatch_fraction,started_at_s,error,samples_ns,metrics\n"));
  }

  // The folder a run was made in: kept, optional for runs that predate it, and a wrong value is
  // an error naming the field, not a guess.
  void workingDirectoryRecord() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    RunStore::create(dir, sample_metadata());
    QCOMPARE(RunStore::read_metadata(dir).working_directory, std::string("/home/someone/ktune"));
    const std::string written = read_file(dir / "run_metadata.json");
    QVERIFY(contains(written, "\"working_directory\": \"/home/someone/ktune\""));
    QCOMPARE(current_working_directory(), fs::current_path().string());

    nlohmann::json j = nlohmann::json::parse(written);
    j.erase("working_directory");
    write_file(dir / "run_metadata.json", j.dump(2));
    const RunMetadata old = RunStore::read_metadata(dir);
    QVERIFY(old.working_directory.empty());
    QVERIFY(!old.to_json().contains("working_directory"));  // not made up on the way back

    for (const auto& [value, expected] : std::vector<std::pair<nlohmann::json, std::string>>{
             {42, "run_metadata.json: working_directory: expected a string"},
             {"tuning/elsewhere", "run_metadata.json: working_directory: not an absolute path"},
             {"", "run_metadata.json: working_directory: not an absolute path"}}) {
      j["working_directory"] = value;
      write_file(dir / "run_metadata.json", j.dump(2));
      const std::string err = input_error_of([&] { RunStore::read_metadata(dir); });
      QVERIFY2(contains(err, expected), err.c_str());
    }
  }

  void trialsRoundTripExact() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    std::vector<Trial> written = {
        ok_trial(0, kKey, 16, 8, awkward_samples(1, 40)),
        failed_trial(1, kKey, TrialStatus::CompileError, "error: \"BM\" too big, see below\nline 2,\r\n\"quoted\""),
        failed_trial(2, kKey, TrialStatus::Pruned, "BM*BK <= 256 (tile fits)"),
        ok_trial(3, "M=32,N=64,K=32,dtype=f32,tp=2/out", 32, 8, awkward_samples(2, 7)),
        failed_trial(4, kKey, TrialStatus::SlowAbort, ""),
    };
    written[4].samples_ns = {42.5};  // a slow_abort keeps the samples it took
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      for (const auto& t : written) store.append(t);
    }
    const auto back = RunStore::read_trials(dir);
    QCOMPARE(back.size(), written.size());
    for (std::size_t i = 0; i < back.size(); ++i) compare_trials(back[i], written[i]);
    // The pruned config's parameter values are in its row.
    QCOMPARE(back[2].config.get("BM"), ParamValue(32));
    QCOMPARE(back[2].config.get("BK"), ParamValue(16));
  }

  void appendSurvivesKill() {
    // Each append reaches the OS before it returns: a SIGKILL right after loses nothing.
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) {
      try {
        RunStore store = RunStore::create(dir, sample_metadata());
        for (int i = 0; i < 5; ++i) store.append(ok_trial(i, kKey, 16, 8, awkward_samples(i, 10)));
      } catch (...) {
        _exit(3);
      }
      raise(SIGKILL);
    }
    int status = 0;
    QCOMPARE(waitpid(child, &status, 0), child);
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child failed before it was killed");
    const auto back = RunStore::read_trials(dir);
    QCOMPARE(back.size(), std::size_t(5));
    compare_trials(back[4], ok_trial(4, kKey, 16, 8, awkward_samples(4, 10)));
  }

  void tornLastLineDroppedAndCutOnResume() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      for (int i = 0; i < 3; ++i) store.append(ok_trial(i, kKey, 16, 8, awkward_samples(i, 5)));
    }
    const fs::path csv_file = dir / "trials.csv";
    const std::string intact = read_file(csv_file);
    // Killed mid-row, inside a quoted error that already holds a line break.
    write_file(csv_file,
               intact + "3,\"" + kKey + "\",compile_error,32,16,0,0,0,0,0,0,0,0,0,0,0,0,\"first line\nsecond li");
    std::optional<std::size_t> torn;
    QCOMPARE(RunStore::read_trials(dir, &torn).size(), std::size_t(3));
    QCOMPARE(torn, std::optional<std::size_t>(5));  // the line it starts on, for merge to name

    {
      RunStore store = RunStore::open_for_resume(dir);
      QCOMPARE(read_file(csv_file), intact);  // the torn row is cut off before appending
      store.append(failed_trial(3, kKey, TrialStatus::Crashed, "illegal address,\nat \"x\""));
    }
    const auto back = RunStore::read_trials(dir, &torn);
    QCOMPARE(back.size(), std::size_t(4));
    QVERIFY(!torn);
    compare_trials(back[3], failed_trial(3, kKey, TrialStatus::Crashed, "illegal address,\nat \"x\""));
  }

  void malformedMiddleRowNamesLine() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      for (int i = 0; i < 3; ++i) store.append(ok_trial(i, kKey, 16, 8, {100.0 + i, 101.0 + i}));
    }
    const fs::path csv_file = dir / "trials.csv";
    const std::string good = read_file(csv_file);
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < good.size();) {
      const std::size_t end = good.find('\n', start);
      lines.push_back(good.substr(start, end - start));
      start = end + 1;
    }
    QCOMPARE(lines.size(), std::size_t(4));  // header + 3 rows, none spanning lines
    auto with_line3 = [&](const std::string& replacement) {
      std::string text;
      for (std::size_t i = 0; i < lines.size(); ++i) text += (i == 2 ? replacement : lines[i]) + "\n";
      write_file(csv_file, text);
      return input_error_of([&] { RunStore::read_trials(dir); });
    };
    const std::string file = csv_file.string();
    std::string err = with_line3("x" + lines[2]);
    QVERIFY2(contains(err, file + ":3:") && contains(err, "column id"), err.c_str());
    err = with_line3(lines[2].substr(0, lines[2].rfind(',')));
    QVERIFY2(contains(err, file + ":3:") && contains(err, "fields"), err.c_str());
    std::string bad_status = lines[2];
    bad_status.replace(bad_status.find(",ok,"), 4, ",bogus,");
    err = with_line3(bad_status);
    QVERIFY2(contains(err, file + ":3:") && contains(err, "bogus"), err.c_str());
    // A stray quote after the samples (before the last, empty metrics field).
    err = with_line3(lines[2].substr(0, lines[2].rfind(',')) + "\"" + lines[2].substr(lines[2].rfind(',')));
    QVERIFY2(contains(err, file + ":3:"), err.c_str());
  }

  // An ok row whose numbers are no times (an edited file, a worker's lie recorded before ktune
  // checked samples) reads as a crashed trial that says why: a resume goes on, and it cannot win.
  void okRowThatIsNoMeasurementReadsAsCrashed() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    std::vector<Trial> written = {ok_trial(0, kKey, 16, 8, {100, 101}), ok_trial(1, kKey, 32, 8, {90, 91}),
                                  ok_trial(2, kKey, 16, 16, {-6, -6}), ok_trial(3, kKey, 32, 16, {80, 81})};
    written[1].stats.median_ns = std::nan("");
    written[3].samples_ns[1] = INFINITY;
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      for (const auto& t : written) store.append(t);
    }
    const auto back = RunStore::read_trials(dir);
    QCOMPARE(back.size(), written.size());
    compare_trials(back[0], written[0]);
    for (const auto& [i, why] :
         {std::pair{1, "median_ns is nan"}, {2, "median_ns is -6"}, {3, "samples_ns holds inf"}}) {
      const Trial& t = back[static_cast<std::size_t>(i)];
      QCOMPARE(t.status, TrialStatus::Crashed);
      QVERIFY2(contains(t.error, std::string("recorded ok, but its ") + why), t.error.c_str());
      QCOMPARE(t.stats.count, std::size_t(0));
      QVERIFY(t.samples_ns.empty());
    }
  }

  void createRefusesExistingRun() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    RunStore::create(dir, sample_metadata()).append(ok_trial(0, kKey, 16, 8, {1, 2, 3}));
    const std::string before = read_file(dir / "trials.csv");
    const std::string err = input_error_of([&] { RunStore::create(dir, sample_metadata()); });
    QVERIFY2(contains(err, "already holds a run; use --resume or another --run-name"), err.c_str());
    QCOMPARE(read_file(dir / "trials.csv"), before);

    RunMetadata clash = sample_metadata();
    clash.space = SearchSpace({{"count", {1, 2}, ""}}, {});
    QVERIFY(contains(input_error_of([&] { RunStore::create(dir / "other", clash); }), "'count'"));
  }

  void resumeChecks() {
    QTemporaryDir tmp;
    const fs::path root(tmp.path().toStdString());
    QVERIFY(contains(input_error_of([&] { RunStore::open_for_resume(root / "missing"); }), "missing"));

    const fs::path dir = root / "run";
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      store.append(ok_trial(0, kKey, 16, 8, {1, 2, 3}));
      store.finish({}, "cancelled");
    }
    {
      RunStore store = RunStore::open_for_resume(dir);
      QCOMPARE(store.metadata().state, std::string("running"));
      QVERIFY(store.metadata().finished_at.empty());
      store.append(ok_trial(1, kKey, 32, 8, {4, 5, 6}));
    }
    QCOMPARE(RunStore::read_trials(dir).size(), std::size_t(2));

    // A header that does not match the run's space (BN instead of BK).
    std::string text = read_file(dir / "trials.csv");
    text.replace(text.find(",BK,"), 4, ",BN,");
    write_file(dir / "trials.csv", text);
    std::string err = input_error_of([&] { RunStore::open_for_resume(dir); });
    QVERIFY2(contains(err, "BM,BN") && contains(err, "BM,BK") && contains(err, "trials.csv"), err.c_str());

    std::string meta = read_file(dir / "run_metadata.json");
    meta.replace(meta.find("\"noise_target\": 0.005"), 21, "\"noise_target\": \"low\"");
    write_file(dir / "run_metadata.json", meta);
    err = input_error_of([&] { RunStore::read_metadata(dir); });
    QVERIFY2(contains(err, "run_metadata.json: measure.noise_target: expected a number"), err.c_str());

    write_file(dir / "run_metadata.json", "{\"ktune_run\": 1, \"run\": ");
    err = input_error_of([&] { RunStore::open_for_resume(dir); });
    QVERIFY2(contains(err, "run_metadata.json") && contains(err, "not valid JSON"), err.c_str());
  }

  void runFolderLockedWhileInUse() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    {
      RunStore store = RunStore::create(dir, sample_metadata());
      std::string err = input_error_of([&] { RunStore::open_for_resume(dir); });
      QVERIFY2(contains(err, "in use by another ktune process"), err.c_str());
      // Another process is refused too.
      const pid_t child = fork();
      QVERIFY(child >= 0);
      if (child == 0) {
        err = input_error_of([&] { RunStore::open_for_resume(dir); });
        _exit(contains(err, "in use") ? 0 : 1);
      }
      int status = 0;
      QCOMPARE(waitpid(child, &status, 0), child);
      QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process could resume a run in use");
      store.append(ok_trial(0, kKey, 16, 8, {1, 2, 3}));
    }
    RunStore::open_for_resume(dir).append(ok_trial(1, kKey, 32, 8, {1, 2, 3}));  // free again
    QCOMPARE(RunStore::read_trials(dir).size(), std::size_t(2));
  }

  void resultsRoundTrip() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    const RunMetadata m = sample_metadata();
    RunStore store = RunStore::create(dir, m);
    const Trial best = ok_trial(0, kKey, 16, 8, awkward_samples(9, 30, false));
    store.append(best);

    ProblemResult with_best;
    with_best.problem = m.problems[0];
    with_best.best = best;
    with_best.baseline_name = "OpenBLAS";
    with_best.baseline = summarize({900, 950, 1000.5});
    with_best.best_paired = summarize({470, 475, 480});
    QCOMPARE(*with_best.speedup(), 2.0);  // 950 / 475: the paired timings, not the search's
    ProblemResult none;                   // no config passed on this problem: not in results.json
    none.problem = m.problems[1];
    QVERIFY(contains(input_error_of([&] { store.finish({with_best, none}, "running"); }), "running"));
    store.finish({with_best, none}, "finished");

    const RunResults r = RunStore::read_results(dir);
    QCOMPARE(r.run_name, m.run_name);
    QCOMPARE(r.family, std::string("gemm"));
    QCOMPARE(r.backend, std::string("cpu"));
    QCOMPARE(r.device, std::string("Test CPU 9000"));
    QCOMPARE(r.device_slug, std::string("test-cpu-9000"));
    QCOMPARE(r.method, std::string("per_launch"));
    QCOMPARE(r.entries.size(), std::size_t(1));
    const ResultEntry& e = r.entries[0];
    QVERIFY(e.problem == m.problems[0]);
    QVERIFY(e.config == best.config);
    QCOMPARE(bits(e.stats.median_ns), bits(best.stats.median_ns));
    QCOMPARE(bits(e.stats.mean_ns), bits(best.stats.mean_ns));
    QCOMPARE(bits(e.stats.std_ns), bits(best.stats.std_ns));
    QCOMPARE(bits(e.stats.min_ns), bits(best.stats.min_ns));
    QCOMPARE(e.stats.count, best.stats.count);
    QCOMPARE(bits(e.compile_time_s), bits(best.compile_time_s));
    QCOMPARE(bits(e.tflops), bits(best.tflops));
    QCOMPARE(e.samples_ns.size(), best.samples_ns.size());
    for (std::size_t i = 0; i < e.samples_ns.size(); ++i) QCOMPARE(bits(e.samples_ns[i]), bits(best.samples_ns[i]));
    QCOMPARE(e.baseline_name, std::string("OpenBLAS"));
    QVERIFY(e.baseline.has_value());
    QCOMPARE(e.baseline->median_ns, 950.0);
    QVERIFY(e.best_paired.has_value());
    QCOMPARE(e.best_paired->median_ns, 475.0);

    const auto j = nlohmann::json::parse(read_file(dir / "results.json"));
    QCOMPARE(j["results"][0]["key"].get<std::string>(), kKey);
    QVERIFY(j["results"][0]["stats"].contains("latency_avg_ns"));
    QCOMPARE(j["results"][0]["baseline"]["name"].get<std::string>(), std::string("OpenBLAS"));

    const RunMetadata after = RunStore::read_metadata(dir);
    QCOMPARE(after.state, std::string("finished"));
    QCOMPARE(after.finished_at, r.finished_at);
    QCOMPARE(folder_names(dir),
             (std::vector<std::string>{".ktune.lock", "results.json", "run_metadata.json", "trials.csv"}));

    std::string text = read_file(dir / "results.json");
    text.replace(text.find("\"tflops\""), 8, "\"tflopz\"");
    write_file(dir / "results.json", text);
    const std::string err = input_error_of([&] { RunStore::read_results(dir); });
    QVERIFY2(contains(err, "results.json") && contains(err, "results[0]") && contains(err, "tflops"), err.c_str());
  }

  void readResultsListsKeysAsNumbers() {
    // results.json written in the order given (as older runs did): the reader lists by key.
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    RunMetadata m = sample_metadata();
    m.problems = {gemm_problem("256"), gemm_problem("16"), gemm_problem("64")};
    RunStore store = RunStore::create(dir, m);
    std::vector<ProblemResult> results;
    for (const Problem& p : m.problems) {
      ProblemResult r;
      r.problem = p;
      r.best = ok_trial(static_cast<std::int64_t>(results.size()), p.key(), 16, 8, awkward_samples(3, 5, false));
      store.append(*r.best);
      results.push_back(std::move(r));
    }
    store.finish(results, "finished");
    std::vector<std::string> keys;
    for (const ResultEntry& e : RunStore::read_results(dir).entries) keys.push_back(e.problem.key());
    QCOMPARE(keys,
             (std::vector<std::string>{gemm_problem("16").key(), gemm_problem("64").key(), gemm_problem("256").key()}));
  }

  void exports() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    const RunMetadata m = sample_metadata();
    RunStore store = RunStore::create(dir, m);
    store.append(ok_trial(0, kKey, 16, 8, {200, 200, 200}));
    store.append(ok_trial(1, kKey, 32, 8, {100, 101, 99}));
    store.append(failed_trial(2, kKey, TrialStatus::WrongResult, "max error 3.5, 12% mismatched"));

    const auto records = csv::parse(export_trials_csv(dir), "export.csv");
    QCOMPARE(records.size(), std::size_t(4));
    const auto& header = records[0].fields;
    QCOMPARE(std::vector<std::string>(header.end() - 3, header.end()),
             (std::vector<std::string>{"config", "rel_error", "vs_best"}));
    QCOMPARE(records[1].fields.back(), std::string("2"));
    QCOMPARE(records[2].fields.back(), std::string("1"));
    QCOMPARE(records[2].fields[header.size() - 3], std::string("BM=32,BK=8"));
    QCOMPARE(records[3].fields.back(), std::string(""));

    nlohmann::json j = export_run_json(dir);
    QCOMPARE(j["metadata"]["run"].get<std::string>(), m.run_name);
    QCOMPARE(j["trials"].size(), std::size_t(3));
    QCOMPARE(j["trials"][2]["status"].get<std::string>(), std::string("wrong_result"));
    QVERIFY(j["results"].is_null());
    ProblemResult r;
    r.problem = m.problems[0];
    r.best = ok_trial(1, kKey, 32, 8, {100, 101, 99});
    store.finish({r}, "finished");
    j = export_run_json(dir);
    QCOMPARE(j["results"]["results"][0]["config"]["BM"].get<int>(), 32);
  }

  void writeFileAtomic() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "f.json";
    write_file_atomic(file, "one");
    QCOMPARE(read_file(file), std::string("one"));
    QCOMPARE(fs::status(file).permissions() & fs::perms::all,
             fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
    ::chmod(file.c_str(), 0600);
    write_file_atomic(file, std::string(1 << 20, 'x'));
    QCOMPARE(read_file(file), std::string(1 << 20, 'x'));
    QCOMPARE(fs::status(file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
    QCOMPARE(folder_names(file.parent_path()), std::vector<std::string>{"f.json"});

    bool threw = false;
    try {
      write_file_atomic(file.parent_path() / "no" / "such" / "folder.json", "x");
    } catch (const RunError& e) {
      threw = contains(e.what(), "folder.json");
    }
    QVERIFY(threw);
  }
};

QTEST_APPLESS_MAIN(TestRunStore)
#include "test_run_store.moc"
