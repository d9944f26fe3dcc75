// What a run folder says about how its run was made (recorded_setup.h), for every kind of run: a
// CLI tune (in process, isolated, through a worker, with a kernel spec), a workbench run, an
// import, a replay and a merge; the family as recorded, built in or read from the shapes; older
// runs that lack a record, which read and say so; and the import's family, recorded since.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>

#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/kernel_tuner_import.h"
#include "ktune/recorded_setup.h"
#include "ktune/replay_backend.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

RunMetadata run(std::vector<std::string> arguments, const std::string& backend = "cpu",
                const std::string& family = "gemm") {
  RunMetadata m;
  m.run_name = "r";
  m.backend = backend;
  m.family = family;
  m.device.backend = backend;
  m.device.name = "Some Device";
  m.arguments = std::move(arguments);
  m.working_directory = "/home/u/repo";
  Problem p;
  p.family = family;
  p.fields = {{"x", "64"}, {"kind", "fast"}};
  m.problems = {p};
  m.space = SearchSpace({{"B", {1, 2}, ""}}, {});
  return m;
}

std::string session(const json& s) { return s.dump(); }

const std::vector<std::unique_ptr<Backend>> kNone;

// The built-in families a test needs are the CPU's: no other backend's specs are read.
std::vector<std::unique_ptr<Backend>> cpu_only() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(make_cpu_backend());
  return out;
}

}  // namespace

class TestRecordedSetup : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::vector<std::unique_ptr<Backend>> backends_ = cpu_only();

 private slots:
  void workerCommandFromEveryKindOfRecord() {
    QCOMPARE(recorded_worker(run({"ktune", "tune", "raw", "--worker", "python3 w.py", "--shape", "n=8"})),
             std::string("python3 w.py"));
    QCOMPARE(recorded_worker(run({"/usr/bin/ktune", "tune", "--worker=ssh gpu1 ktune worker"})),
             std::string("ssh gpu1 ktune worker"));
    QCOMPARE(recorded_worker(run({"ktune-workbench", "--session", session({{"family", "raw"}, {"worker", "x y"}})})),
             std::string("x y"));
    QCOMPARE(recorded_worker(run({"ktune", "tune", "gemm", "--backend", "cpu"})), std::string());
    // A hand-edited session names no worker that can be told, and none is started either way.
    QCOMPARE(recorded_worker(run({"ktune-workbench", "--session", "{not json"})), std::string());
    // A merge's command line names its shards; the worker is in theirs.
    RunMetadata merged = run({"ktune", "merge", "a", "b"});
    merged.merged_from = {json{{"arguments", {"ktune", "tune", "gemm"}}},
                          json{{"arguments", {"ktune", "tune", "raw", "--worker", "python3 w.py"}}}};
    QCOMPARE(recorded_worker(merged), std::string("python3 w.py"));
  }

  // Relative paths of the record mean files in the folder it was made in: the worker runs there,
  // the spec and the imported cache are found there; a merge's and a workbench run's worker runs
  // where its own record says. A run that predates the record says so.
  void folderOfTheRecord() {
    const auto setup = [&](const RunMetadata& m) { return recorded_setup(m, backends_); };
    RunMetadata m = run({"ktune", "tune", "raw", "--worker", "python3 w/raw.py"}, "raw", "raw");
    QCOMPARE(recorded_worker_folder(m), std::string("/home/u/repo"));
    RecordedSetup s = setup(m);
    QCOMPARE(s.worker_folder, std::string("/home/u/repo"));
    QCOMPARE(s.folder, std::string("/home/u/repo"));

    s = setup(run({"ktune", "tune", "my", "--backend", "cuda", "--kernel-spec", "specs/../my.json"}, "cuda", "my"));
    QCOMPARE(s.resolve(s.kernel_spec), std::string("/home/u/repo/my.json"));
    QCOMPARE(s.resolve("/abs/spec.json"), std::string("/abs/spec.json"));
    s = setup(run({"ktune", "import", "kernel-tuner", "caches/c.json"}, "cuda", "matmul"));
    QCOMPARE(s.resolve(s.source), std::string("/home/u/repo/caches/c.json"));

    // A workbench run whose worker was reconnected in another folder records that folder.
    s = setup(run({"ktune-workbench", "--session",
                   session({{"family", "raw"}, {"worker", "python3 w.py"}, {"worker_directory", "/runs/made/here"}})}));
    QCOMPARE(s.worker_folder, std::string("/runs/made/here"));
    s = setup(run({"ktune-workbench", "--session", session({{"family", "raw"}, {"worker", "python3 w.py"}})}));
    QCOMPARE(s.worker_folder, std::string("/home/u/repo"));

    // A merge: its worker's folder is the shard's that had the worker; the spec's the first shard's.
    RunMetadata merged = run({"ktune", "merge", "s0", "s1"});
    merged.merged_from = {
        json{{"arguments", {"ktune", "tune", "gemm"}}, {"working_directory", "/a"}},
        json{{"arguments", {"ktune", "tune", "raw", "--worker", "python3 w.py"}}, {"working_directory", "/b"}}};
    QCOMPARE(recorded_worker_folder(merged), std::string("/b"));
    s = setup(merged);
    QCOMPARE(s.worker_folder, std::string("/b"));
    QCOMPARE(s.folder, std::string("/a"));
    // A shard record that does not read names no folder rather than a wrong one.
    merged.merged_from[1]["working_directory"] = "relative/b";
    QCOMPARE(recorded_worker_folder(merged), std::string());

    // Older runs: paths stay as given, and the page says what is not known.
    m.working_directory.clear();
    s = setup(m);
    QVERIFY(s.worker_folder.empty());
    QCOMPARE(s.resolve("specs/my.json"), std::string("specs/my.json"));
    QVERIFY(std::any_of(s.unknown.begin(), s.unknown.end(), [](const std::string& u) {
      return u.find("the folder the run was made in") != std::string::npos;
    }));
  }

  void originIsolationAndSpec() {
    const auto setup = [&](const RunMetadata& m) { return recorded_setup(m, backends_); };
    RecordedSetup s = setup(run({"ktune", "tune", "gemm", "--backend", "cpu", "--isolate"}));
    QVERIFY(s.origin == RunOrigin::Tune);
    QCOMPARE(s.isolate, std::optional<bool>(true));
    QVERIFY(s.family_built_in);
    QCOMPARE(s.family.name, std::string("gemm"));
    QVERIFY(s.unknown.empty());
    QCOMPARE(setup(run({"ktune", "tune", "gemm", "--no-isolate"})).isolate, std::optional<bool>(false));
    QVERIFY(!setup(run({"ktune", "tune", "gemm"})).isolate);  // the backend's default

    s = setup(run({"ktune-workbench", "--session", session({{"family", "gemm"}, {"isolate", false}})}));
    QVERIFY(s.origin == RunOrigin::Workbench);
    QCOMPARE(s.isolate, std::optional<bool>(false));
    s = setup(run({"ktune-workbench", "--session", "[1,"}));
    QCOMPARE(s.unknown.size(), std::size_t(1));
    QVERIFY2(s.unknown.front().find("session") != std::string::npos, s.unknown.front().c_str());

    s = setup(
        run({"ktune", "tune", "my_gemm", "--backend", "cuda", "--kernel-spec", "specs/my.json"}, "cuda", "my_gemm"));
    QCOMPARE(s.kernel_spec, std::string("specs/my.json"));

    s = setup(run({"ktune", "import", "kernel-tuner", "/data/cache.json"}, "cuda", "matmul"));
    QVERIFY(s.origin == RunOrigin::Import);
    QCOMPARE(s.source, std::string("/data/cache.json"));
    s = setup(run({"ktune", "tune", "--replay", "runs/kt", "--strategy", "random"}, "replay", "matmul"));
    QVERIFY(s.origin == RunOrigin::Replay);
    QCOMPARE(s.source, std::string("runs/kt"));
    s = setup(run({"ktune-workbench", "replay", "runs/kt", "--strategy", "bayes"}, "replay", "matmul"));
    QVERIFY(s.origin == RunOrigin::Replay);
    QCOMPARE(s.source, std::string("runs/kt"));

    // A merge reads how its shards were made.
    RunMetadata merged = run({"ktune", "merge", "s0", "s1"});
    merged.merged_from = {json{{"arguments", {"ktune", "tune", "gemm", "--isolate"}}},
                          json{{"arguments", json::array()}}};
    s = setup(merged);
    QVERIFY(s.origin == RunOrigin::Merge);
    QCOMPARE(s.shards, std::size_t(2));
    QCOMPARE(s.isolate, std::optional<bool>(true));
    QCOMPARE(to_string(RunOrigin::Merge), std::string("merge"));
  }

  void familyAsRecordedBuiltInOrFromTheShapes() {
    // Recorded: the description wins, also over a built-in family of the same name.
    RunMetadata m = run({"ktune", "tune", "raw", "--worker", "w"}, "raw", "raw");
    KernelFamily raw;
    raw.name = "raw";
    raw.description = "the worker's own";
    raw.key_fields = {{"x", true, "8", {}, ""}, {"kind", false, "fast", {}, ""}};
    raw.flops_expr = "2*x";
    raw.default_space = m.space;
    raw.source = "worker";
    m.family_description = describe_family(raw, m.space);
    RecordedSetup s = recorded_setup(m, backends_);
    QCOMPARE(s.family.description, std::string("the worker's own"));
    QCOMPARE(s.family.backend, std::string("raw"));
    QCOMPARE(s.family.key_fields.front().default_value, std::string("8"));
    QVERIFY(!s.family_built_in);
    QVERIFY(s.unknown.empty());

    // A replay's backend is "replay": the device's backend still finds a built-in family.
    RunMetadata replayed = run({"ktune", "tune", "--replay", "runs/cpu"}, "replay", "gemm");
    replayed.device.backend = "cpu";
    s = recorded_setup(replayed, backends_);
    QVERIFY(s.family_built_in);
    QVERIFY(!s.family.flops_expr.empty());

    // Neither: the shapes tell the key fields, and the run says what it does not record.
    RunMetadata old = run({"ktune", "tune", "raw", "--worker", "w"}, "raw", "raw");
    s = recorded_setup(old, kNone);
    QCOMPARE(s.family.name, std::string("raw"));
    QCOMPARE(s.family.backend, std::string("raw"));
    QCOMPARE(s.family.key_fields.size(), std::size_t(2));
    QVERIFY(s.family.field("x")->numeric);
    QVERIFY(!s.family.field("kind")->numeric);
    QCOMPARE(s.unknown.size(), std::size_t(1));
    QVERIFY2(s.unknown.front().find("FLOP count") != std::string::npos, s.unknown.front().c_str());
    QVERIFY(s.family.default_space == old.space);

    // A description that does not read is said, not thrown.
    old.family_description = json{{"name", 3}};
    s = recorded_setup(old, kNone);
    QCOMPARE(s.family.name, std::string("raw"));
    QVERIFY2(s.unknown.front().find("does not read") != std::string::npos, s.unknown.front().c_str());
  }

  void recordedBackendShowsAndNeverRuns() {
    const RunMetadata m = run({"ktune", "import", "kernel-tuner", "c.json"}, "cuda", "matmul");
    const RecordedSetup s = recorded_setup(m, kNone);
    const auto backend = recorded_backend(m, s, "ktune has no kernel for 'matmul'");
    QCOMPARE(backend->name(), std::string("cuda"));
    QCOMPARE(backend->devices().size(), std::size_t(1));
    QCOMPARE(backend->devices().front().name, std::string("Some Device"));
    QCOMPARE(backend->family("matmul").name, std::string("matmul"));
    try {
      backend->open(m.device, s.family, m.problems.front(), 0);
      QFAIL("a recorded backend opened a session");
    } catch (const InputError& e) {
      QCOMPARE(std::string(e.what()), std::string("ktune has no kernel for 'matmul'"));
    }
  }

  // The import records its kernel as data; a replay of it keeps that family.
  void importRecordsItsFamily() {
    const fs::path cache = fs::path(KTUNE_SOURCE_DIR) / "tests" / "data" / "kernel_tuner_matmul_cache.json";
    KernelTunerCache imported = read_kernel_tuner_cache(cache);
    const json& d = imported.metadata.family_description;
    QVERIFY(!d.is_null());
    QCOMPARE(d["name"].get<std::string>(), std::string("matmul_kernel"));
    QCOMPARE(d["source"].get<std::string>(), std::string("kernel_tuner_cache"));
    QVERIFY(d["description"].get<std::string>().find(cache.string()) != std::string::npos);
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "kt";
    write_imported_run(dir, std::move(imported));
    const RunMetadata m = RunStore::read_metadata(dir);
    const RecordedSetup s = recorded_setup(m, backends_);
    QVERIFY(s.origin == RunOrigin::Import);
    QVERIFY(s.unknown.empty());
    QCOMPARE(s.family.key_fields.size(), std::size_t(2));
    QCOMPARE(s.family.key_fields.front().name, std::string("x"));
    const auto replay = ReplayBackend::for_run(dir, backends_);
    QVERIFY(replay->families().front().description.find("Kernel Tuner's matmul_kernel") != std::string::npos);
  }
};

QTEST_MAIN(TestRecordedSetup)
#include "test_recorded_setup.moc"
