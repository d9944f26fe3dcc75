// apply --remeasure's core: the registry's config and the run's, timed side by side in
// alternation on the device, class each key from the paired ratio. A registry entry recorded
// "on a cooler device" (its median 500 ns, though its config takes 1162 ns now) makes the
// recorded diff call the run slower; the paired numbers call it faster, and apply follows them.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>

#include "axpy_backend.h"
#include "ktune/diff.h"
#include "ktune/judge.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"

using namespace ktune;
using namespace ktune::test;
namespace fs = std::filesystem;

class TestJudge : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path root() const { return dir_.path().toStdString(); }

  // A finished run of one config (modelled, noise-free: 1000 + |chunk - 512| / 4 + 50 |unroll - 2| ns).
  fs::path tune(AxpyBackend& b, ParamValue unroll, ParamValue chunk, const std::string& name) {
    b.modelled = true;
    TuneRequest req = request(b, "n=256", SearchSpace({{"unroll", {unroll}, ""}, {"chunk", {chunk}, ""}}, {}));
    req.measure.warmup_ms = 0;
    req.run_dir = root() / name;
    Recorder rec;
    Tuner(b, b.devices()[0]).run(req, rec);
    return req.run_dir;
  }

  fs::path registry_file(const RunResults& run) const {
    return Registry::file_for(root() / "registry", run.backend, run.device_slug);
  }

  // The registry's entry for the run's key, with its recorded numbers set to `median_ns`.
  void record_registry(const RunResults& run, double median_ns) {
    apply_run(run, root() / "registry", {});
    Registry reg = Registry::load(registry_file(run));
    RegistryEntry e = *reg.find("axpy", run.entries.front().problem.key());
    e.latency_median_ns = e.latency_avg_ns = median_ns;
    e.samples_ns.assign(10, median_ns);
    reg.set("axpy", run.entries.front().problem.key(), e);
    reg.save(registry_file(run));
  }

 private slots:
  void pairedNumbersClassTheKeys() {
    AxpyBackend b;
    const RunResults old_run = RunStore::read_results(tune(b, 1, 64, "old"));  // 1162 ns
    record_registry(old_run, 500);
    const fs::path new_dir = tune(b, 2, 512, "new");  // 1000 ns
    const RunResults run = RunStore::read_results(new_dir);
    const RunMetadata metadata = RunStore::read_metadata(new_dir);

    const RegistryDiff recorded = diff_run(run, root() / "registry");
    QCOMPARE(recorded.entries.front().cls, DiffClass::Slower);  // 500 ns recorded against 1000 ns
    QVERIFY(!recorded.entries.front().paired);

    const auto verdicts = judge_on_device(run, metadata, recorded, b, b.devices()[0], b.family("axpy"));
    QCOMPARE(verdicts.size(), std::size_t(1));
    QVERIFY2(verdicts[0].note.empty(), verdicts[0].note.c_str());
    QCOMPARE(summarize(verdicts[0].registry_samples_ns).median_ns, 1162.0);
    QCOMPARE(summarize(verdicts[0].run_samples_ns).median_ns, 1000.0);

    const RegistryDiff judged = diff_run(run, root() / "registry", 0.02, verdicts);
    QCOMPARE(judged.entries.front().cls, DiffClass::Faster);
    QVERIFY(judged.entries.front().paired);
    QCOMPARE(judged.entries.front().ratio, 1.162);

    // apply follows the paired class: skipped as slower without it, written with it.
    ApplyOptions dry;
    dry.dry_run = true;
    const ApplyReport without = apply_run(run, root() / "registry", dry);
    QCOMPARE(without.written.size(), std::size_t(0));
    QVERIFY(QString::fromStdString(without.skip_reasons.front()).contains("slower"));
    ApplyOptions with;
    with.paired = verdicts;
    const ApplyReport rep = apply_run(run, root() / "registry", with);
    QCOMPARE(rep.written.size(), std::size_t(1));
    const Config written = Registry::load(registry_file(run)).find("axpy", run.entries.front().problem.key())->config;
    QCOMPARE(written.get("unroll"), ParamValue(2));
    QCOMPARE(written.get("chunk"), ParamValue(512));
  }

  // A registry config this build cannot compile any more: a note, no samples, the recorded diff stands.
  void aConfigThatFailsNowKeepsTheRecordedClass() {
    AxpyBackend b;
    const RunResults old_run = RunStore::read_results(tune(b, 1, 64, "old2"));
    apply_run(old_run, root() / "registry2", {});
    const fs::path file = Registry::file_for(root() / "registry2", old_run.backend, old_run.device_slug);
    Registry reg = Registry::load(file);
    RegistryEntry e = *reg.find("axpy", old_run.entries.front().problem.key());
    e.config = Config({{"unroll", 3}, {"chunk", 64}});  // no specialization for unroll=3: compile error
    reg.set("axpy", old_run.entries.front().problem.key(), e);
    reg.save(file);

    const fs::path new_dir = tune(b, 2, 512, "new2");
    const RunResults run = RunStore::read_results(new_dir);
    const RegistryDiff recorded = diff_run(run, root() / "registry2");
    const auto verdicts =
        judge_on_device(run, RunStore::read_metadata(new_dir), recorded, b, b.devices()[0], b.family("axpy"));
    QCOMPARE(verdicts.size(), std::size_t(1));
    QVERIFY(verdicts[0].registry_samples_ns.empty());
    QVERIFY2(QString::fromStdString(verdicts[0].note).contains("the registry's config could not be timed"),
             verdicts[0].note.c_str());
    const RegistryDiff judged = diff_run(run, root() / "registry2", 0.02, verdicts);
    QCOMPARE(judged.entries.front().cls, recorded.entries.front().cls);
    QVERIFY(!judged.entries.front().paired);
  }
};

QTEST_GUILESS_MAIN(TestJudge)
#include "test_judge.moc"
