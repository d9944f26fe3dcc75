// diff_run / apply_run against a real registry folder: classification, choosing keys, refusing
// slower entries, backups, dry runs, idempotence, and a registry that survives SIGKILL mid-apply.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "ktune/diff.h"
#include "ktune/run_store.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

Problem gemm(int m) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(m)}, {"N", "256"}, {"K", "256"}, {"dtype", "f32"}};
  return p;
}
std::string key(int m) { return gemm(m).key(); }

// 21 samples spread evenly by ±rel_spread around `median` (which is their exact median).
std::vector<double> around(double median, double rel_spread) {
  std::vector<double> s;
  for (int i = -10; i <= 10; ++i) s.push_back(median * (1 + rel_spread * i / 10.0));
  return s;
}

ResultEntry result(int m, ParamValue bm, std::vector<double> samples) {
  ResultEntry r;
  r.problem = gemm(m);
  r.config = Config({{"BM", bm}, {"BN", 64}});
  r.stats = summarize(samples);
  r.samples_ns = std::move(samples);
  r.compile_time_s = 0.25;
  r.tflops = 1.5;
  return r;
}

RunResults run(const std::string& name, std::vector<ResultEntry> entries) {
  RunResults r;
  r.run_name = name;
  r.family = "gemm";
  r.backend = "cpu";
  r.device = "Test CPU";
  r.device_slug = "test-cpu";
  r.method = "amortized";
  r.finished_at = "2026-11-23T05:00:00Z";
  r.state = "finished";
  r.entries = std::move(entries);
  return r;
}

// The registry before run2: four problems at 1000 ns with config BM=16.
RunResults base_run() {
  return run("base", {result(1, 16, around(1000, 0.001)), result(2, 16, around(1000, 0.001)),
                      result(4, 16, around(1000, 0.001))});
}
// Against base: M=1 faster (1.25x), M=2 slower (0.8x), M=4 the same (0.5%), M=8 new.
RunResults run2() {
  return run("run2", {result(1, 32, around(800, 0.001)), result(2, 32, around(1250, 0.001)),
                      result(4, 32, around(1005, 0.001)), result(8, 32, around(700, 0.001))});
}

const DiffEntry& find(const std::vector<DiffEntry>& entries, int m) {
  for (const auto& d : entries)
    if (d.key == key(m)) return d;
  throw std::runtime_error("no diff entry for " + key(m));
}
bool has(const std::vector<DiffEntry>& entries, int m) {
  return std::any_of(entries.begin(), entries.end(), [&](const DiffEntry& d) { return d.key == key(m); });
}

}  // namespace

class TestDiffApply : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp_;
  fs::path root_, file_;

  ParamValue registry_bm(int m) const {
    const Registry reg = Registry::load(file_);
    const RegistryEntry* e = reg.find("gemm", key(m));
    return e ? e->config.get("BM") : -1;
  }

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    root_ = fs::path(tmp_->path().toStdString()) / "tuned_data";
    file_ = root_ / "cpu" / "test-cpu.json";
  }

  void firstApplyCreatesTheFile() {
    const ApplyReport rep = apply_run(base_run(), root_, {});
    QCOMPARE(rep.registry_file, file_);
    QCOMPARE(rep.written.size(), std::size_t(3));
    QVERIFY(rep.backup_file.empty());
    QVERIFY(!fs::exists(file_.string() + ".bak"));
    const Registry reg = Registry::load(file_);
    QCOMPARE(reg.device(), std::string("test-cpu"));
    const RegistryEntry* e = reg.find("gemm", key(1));
    QVERIFY(e);
    QCOMPARE(e->run, std::string("base"));
    QCOMPARE(e->latency_median_ns, 1000.0);
    QCOMPARE(e->benchmarking_method, std::string("amortized"));
    QCOMPARE(e->samples_ns.size(), std::size_t(21));
  }

  void otherMethodIsNotComparable() {
    apply_run(base_run(), root_, {});
    RunResults cold = run2();
    cold.method = "per_launch";
    const RegistryDiff diff = diff_run(cold, root_);
    // Faster, slower and same by their medians, but measured another way: none of those.
    for (int m : {1, 2, 4}) QCOMPARE(find(diff.entries, m).cls, DiffClass::NotComparable);
    QCOMPARE(find(diff.entries, 8).cls, DiffClass::New);
    QCOMPARE(std::string(to_string(DiffClass::NotComparable)), std::string("not comparable"));
    const ApplyReport rep = apply_run(cold, root_, {});
    QCOMPARE(rep.written.size(), std::size_t(1));
    QCOMPARE(rep.skipped.size(), std::size_t(3));
    QVERIFY(QString::fromStdString(rep.skip_reasons[0]).contains("not comparable: measured per_launch"));
    QCOMPARE(registry_bm(1), ParamValue(16));
    ApplyOptions force;
    force.force = true;
    QCOMPARE(apply_run(cold, root_, force).written.size(), std::size_t(3));  // M=4 is "same" no longer, M=8 done
    QCOMPARE(registry_bm(1), ParamValue(32));
  }

  // An entry imported without stats (tpu-inference's configs): no number to beat, so not a speedup.
  void unmeasuredEntryIsNotASpeedup() {
    Registry reg("cpu", "test-cpu");
    RegistryEntry shipped;
    shipped.config = Config({{"BM", 16}, {"BN", 64}});
    shipped.imported_from = "tpu-inference tpu_v6e.json";
    reg.set("gemm", key(1), shipped);
    const fs::path file = Registry::file_for(root_, "cpu", "test-cpu");
    reg.save(file);
    // Written and read back as "stats": {}, through both readers.
    QVERIFY(QString::fromStdString(read_text_file(file)).contains("\"stats\": {}"));
    QVERIFY(!Registry::load(file).find("gemm", key(1))->measured());
    QVERIFY(!Registry::from_text(read_text_file(file), "f", true).find("gemm", key(1))->measured());
    QCOMPARE(RegistryEntry::from_json(shipped.to_json()).latency_median_ns, 0.0);

    const RegistryDiff diff = diff_run(run2(), root_);
    const DiffEntry& d = find(diff.entries, 1);
    QCOMPARE(d.cls, DiffClass::Unmeasured);
    QCOMPARE(std::string(to_string(d.cls)), std::string("unmeasured"));
    QCOMPARE(d.ratio, 0.0);
    QCOMPARE(d.old_ns, 0.0);
    const ApplyReport rep = apply_run(run2(), root_, {});
    QVERIFY(std::none_of(rep.written.begin(), rep.written.end(), [&](const DiffEntry& w) { return w.key == key(1); }));
    const auto i =
        std::find_if(rep.skipped.begin(), rep.skipped.end(), [&](const DiffEntry& s) { return s.key == key(1); });
    QVERIFY(i != rep.skipped.end());
    const std::string why = rep.skip_reasons[static_cast<std::size_t>(i - rep.skipped.begin())];
    QVERIFY2(contains(why, "no measurement (tpu-inference tpu_v6e.json)") && contains(why, "--remeasure"), why.c_str());
    QCOMPARE(registry_bm(1), ParamValue(16));
    ApplyOptions force;
    force.force = true;
    apply_run(run2(), root_, force);
    QCOMPARE(registry_bm(1), ParamValue(32));
    QVERIFY(Registry::load(file).find("gemm", key(1))->measured());
  }

  void unfinishedRunIsNotApplied() {
    RunResults partial = base_run();
    partial.state = "cancelled";
    partial.measured = 69;
    partial.planned = 112;
    const std::string err = input_error_of([&] { apply_run(partial, root_, {}); });
    QVERIFY2(QString::fromStdString(err).contains("run base is cancelled (69 of 112 configs measured)"), err.c_str());
    QVERIFY(QString::fromStdString(err).contains("--allow-unfinished"));
    QVERIFY(!fs::exists(file_));
    ApplyOptions allow;
    allow.allow_unfinished = true;
    QCOMPARE(apply_run(partial, root_, allow).written.size(), std::size_t(3));
  }

  void diffClasses() {
    apply_run(base_run(), root_, {});
    const RegistryDiff diff = diff_run(run2(), root_);
    QCOMPARE(diff.registry_file, file_);
    QCOMPARE(diff.entries.size(), std::size_t(4));
    QCOMPARE(to_string(find(diff.entries, 1).cls), "faster");
    QVERIFY(std::abs(find(diff.entries, 1).ratio - 1.25) < 1e-9);
    QCOMPARE(to_string(find(diff.entries, 2).cls), "slower");
    QVERIFY(std::abs(find(diff.entries, 2).ratio - 0.8) < 1e-9);
    QCOMPARE(to_string(find(diff.entries, 4).cls), "same");
    QCOMPARE(to_string(find(diff.entries, 8).cls), "new");
    QCOMPARE(find(diff.entries, 8).ratio, 0.0);
    QVERIFY(!find(diff.entries, 8).old_entry);
    QCOMPARE(find(diff.entries, 1).old_entry->config.get("BM"), ParamValue(16));
    QCOMPARE(find(diff.entries, 1).new_entry.config.get("BM"), ParamValue(32));
    QCOMPARE(find(diff.entries, 1).threshold, 0.02);
  }

  void entriesListInNumericKeyOrder() {
    // Given as 8, 1, 4, 2 (as text "M=8" would sort last only by luck; "M=16" before "M=2").
    const RegistryDiff diff =
        diff_run(run("order", {result(8, 32, around(700, 0.001)), result(16, 32, around(900, 0.001)),
                               result(1, 32, around(800, 0.001)), result(2, 32, around(1250, 0.001))}),
                 root_);
    QStringList keys;
    for (const auto& d : diff.entries) keys << QString::fromStdString(d.key);
    QCOMPARE(keys, (QStringList{QString::fromStdString(key(1)), QString::fromStdString(key(2)),
                                QString::fromStdString(key(8)), QString::fromStdString(key(16))}));
  }

  void noiseWidensSame() {
    apply_run(run("noisy", {result(1, 16, around(1000, 0.5)), result(2, 16, around(1000, 0.001))}), root_, {});
    // 5% faster: within the noise of M=1's samples, beyond the 2% threshold for M=2's tight ones.
    const RegistryDiff diff =
        diff_run(run("r", {result(1, 32, around(950, 0.5)), result(2, 32, around(950, 0.001))}), root_);
    QCOMPARE(to_string(find(diff.entries, 1).cls), "same");
    QVERIFY(find(diff.entries, 1).threshold > 0.1);
    QCOMPARE(to_string(find(diff.entries, 2).cls), "faster");
  }

  void outlierDoesNotWidenSame() {
    // One preempted sample 100x slower must not hide a 5% gain.
    std::vector<double> old_samples = around(1000, 0.001), new_samples = around(950, 0.001);
    old_samples.push_back(100000);
    new_samples.push_back(95000);
    apply_run(run("old", {result(1, 16, old_samples)}), root_, {});
    const RegistryDiff diff = diff_run(run("new", {result(1, 32, new_samples)}), root_);
    QCOMPARE(to_string(find(diff.entries, 1).cls), "faster");
    QCOMPARE(find(diff.entries, 1).threshold, 0.02);
  }

  void applyDefaultsToNewAndFaster() {
    apply_run(base_run(), root_, {});
    const ApplyReport rep = apply_run(run2(), root_, {});
    QCOMPARE(rep.written.size(), std::size_t(2));
    QVERIFY(has(rep.written, 1) && has(rep.written, 8));
    QCOMPARE(rep.skipped.size(), std::size_t(2));
    QCOMPARE(rep.skip_reasons.size(), std::size_t(2));
    for (std::size_t i = 0; i < rep.skipped.size(); ++i) {
      if (rep.skipped[i].key == key(2)) QVERIFY2(contains(rep.skip_reasons[i], "--force"), rep.skip_reasons[i].c_str());
      if (rep.skipped[i].key == key(4)) QVERIFY2(contains(rep.skip_reasons[i], "same"), rep.skip_reasons[i].c_str());
    }
    QCOMPARE(registry_bm(1), ParamValue(32));
    QCOMPARE(registry_bm(2), ParamValue(16));
    QCOMPARE(registry_bm(4), ParamValue(16));
    QCOMPARE(registry_bm(8), ParamValue(32));
  }

  void applyOnlyChosenKeys() {
    apply_run(base_run(), root_, {});
    ApplyOptions opt;
    opt.keys = {key(8)};
    const ApplyReport rep = apply_run(run2(), root_, opt);
    QCOMPARE(rep.written.size(), std::size_t(1));
    QCOMPARE(rep.written[0].key, key(8));
    QCOMPARE(registry_bm(8), ParamValue(32));
    QCOMPARE(registry_bm(1), ParamValue(16));  // faster, but not chosen
  }

  void slowerRefusedThenForced() {
    apply_run(base_run(), root_, {});
    const std::string before = read_text_file(file_);
    ApplyOptions opt;
    opt.keys = {key(2)};
    ApplyReport rep = apply_run(run2(), root_, opt);
    QVERIFY(!rep.changed());
    QCOMPARE(rep.skipped.size(), std::size_t(4));
    QCOMPARE(read_text_file(file_), before);
    QVERIFY(!fs::exists(file_.string() + ".bak"));

    opt.force = true;
    rep = apply_run(run2(), root_, opt);
    QCOMPARE(rep.written.size(), std::size_t(1));
    QCOMPARE(to_string(rep.written[0].cls), "slower");
    QCOMPARE(registry_bm(2), ParamValue(32));
    QCOMPARE(registry_bm(1), ParamValue(16));
  }

  void backupKeepsOldContent() {
    apply_run(base_run(), root_, {});
    const std::string before = read_text_file(file_);
    const ApplyReport rep = apply_run(run2(), root_, {});
    QCOMPARE(rep.backup_file, fs::path(file_.string() + ".bak"));
    QCOMPARE(read_text_file(rep.backup_file), before);
    QVERIFY(read_text_file(file_) != before);
  }

  void dryRunWritesNothing() {
    apply_run(base_run(), root_, {});
    const std::string before = read_text_file(file_);
    const auto mtime = fs::last_write_time(file_);
    ApplyOptions opt;
    opt.dry_run = true;
    const ApplyReport rep = apply_run(run2(), root_, opt);
    QCOMPARE(rep.written.size(), std::size_t(2));
    QVERIFY(rep.backup_file.empty());
    QCOMPARE(read_text_file(file_), before);
    QVERIFY(fs::last_write_time(file_) == mtime);
    QVERIFY(!fs::exists(file_.string() + ".bak"));
    // Nor is a missing registry created.
    apply_run(run2(), root_ / "elsewhere", opt);
    QVERIFY(!fs::exists(root_ / "elsewhere"));
  }

  void secondApplyIsNoOp() {
    apply_run(base_run(), root_, {});
    ApplyOptions opt;
    opt.force = true;
    QVERIFY(apply_run(run2(), root_, opt).changed());
    const std::string registry = read_text_file(file_), backup = read_text_file(file_.string() + ".bak");
    const ApplyReport again = apply_run(run2(), root_, opt);
    QVERIFY(!again.changed());
    QCOMPARE(again.skipped.size(), std::size_t(4));
    QCOMPARE(read_text_file(file_), registry);
    QCOMPARE(read_text_file(file_.string() + ".bak"), backup);
  }

  // Entries keep the winner's conditions; where the registry's number and the run's were taken at
  // SM clocks more than 3 % apart, the diff says so beside the ratio, and classes them as before.
  void clocksApartAreNotedNotReclassed() {
    const auto at = [](ResultEntry r, double mhz) {
      r.conditions = {{kSmClockMhz, mhz}, {kPowerW, 690}, {kClockLimited, mhz < 1900 ? 1.0 : 0.0}};
      return r;
    };
    RunResults base = base_run();
    for (auto& r : base.entries) r = at(r, 1980);
    apply_run(base, root_, {});
    QCOMPARE(Registry::load(file_).find("gemm", key(1))->conditions, base.entries[0].conditions);

    // M=1 faster at 1425 MHz (28 % below), M=2 slower at 1930 (2.5 %), M=4 the same at 1900 (4 %).
    RunResults hot = run2();
    hot.entries[0] = at(hot.entries[0], 1425);
    hot.entries[1] = at(hot.entries[1], 1930);
    hot.entries[2] = at(hot.entries[2], 1900);
    hot.entries[3] = at(hot.entries[3], 1425);
    RegistryDiff diff = diff_run(hot, root_);
    QCOMPARE(find(diff.entries, 1).cls, DiffClass::Faster);
    QCOMPARE(find(diff.entries, 1).conditions_note,
             std::string("old measured at 1980 MHz, new at 1425 MHz: the ratio carries the clock"));
    QCOMPARE(find(diff.entries, 2).cls, DiffClass::Slower);
    QVERIFY(find(diff.entries, 2).conditions_note.empty());
    QCOMPARE(find(diff.entries, 4).cls, DiffClass::Same);
    QVERIFY(contains(find(diff.entries, 4).conditions_note, "at 1980 MHz, new at 1900 MHz"));
    QCOMPARE(find(diff.entries, 8).cls, DiffClass::New);  // nothing to compare with
    QVERIFY(find(diff.entries, 8).conditions_note.empty());

    // A side without a clock says nothing; nor does a paired verdict (both timed at one moment).
    RunResults unread = run2();
    diff = diff_run(unread, root_);
    for (const auto& d : diff.entries) QVERIFY2(d.conditions_note.empty(), d.conditions_note.c_str());
    PairedVerdict v{"gemm", key(1), Config({{"BM", 16}, {"BN", 64}}), around(1000, 0.001), around(800, 0.001), ""};
    diff = diff_run(hot, root_, 0.02, {v});
    QVERIFY(find(diff.entries, 1).paired);
    QVERIFY(find(diff.entries, 1).conditions_note.empty());
    QVERIFY(!find(diff.entries, 4).conditions_note.empty());

    // Applied, the run's conditions replace the entry's with its number.
    apply_run(hot, root_, {});
    QCOMPARE(Registry::load(file_).find("gemm", key(1))->conditions.at(kSmClockMhz), 1425.0);
    QCOMPARE(Registry::load(file_).find("gemm", key(2))->conditions.at(kSmClockMhz), 1980.0);
  }

  void unknownKeyNamesValidOnes() {
    apply_run(base_run(), root_, {});
    const std::string before = read_text_file(file_);
    ApplyOptions opt;
    opt.keys = {key(8), "M=3,N=256,K=256,dtype=f32"};
    const std::string err = input_error_of([&] { apply_run(run2(), root_, opt); });
    QVERIFY2(contains(err, "'M=3,N=256,K=256,dtype=f32'") && contains(err, key(1)) && contains(err, key(8)),
             err.c_str());
    QCOMPARE(read_text_file(file_), before);
  }

  void foreignRegistryFileRefused() {
    Registry other("cpu", "another-cpu");
    other.save(file_);
    const std::string err = input_error_of([&] { diff_run(run2(), root_); });
    QVERIFY2(contains(err, "another-cpu") && contains(err, "test-cpu"), err.c_str());
  }

  void concurrentAppliesKeepEveryEntry() {
    // Four processes each apply 25 one-problem runs to the same registry at the same time (one
    // tuning job per GPU, each with --update-registry): no entry may be lost.
    constexpr int kProcs = 4, kRuns = 25;
    std::vector<pid_t> children;
    for (int p = 0; p < kProcs; ++p) {
      const pid_t child = fork();
      QVERIFY(child >= 0);
      if (child == 0) {
        try {
          for (int i = 0; i < kRuns; ++i)
            apply_run(run("p" + std::to_string(p), {result(p * kRuns + i + 1, 16, around(1000, 0.01))}), root_, {});
        } catch (...) {
          _exit(3);
        }
        _exit(0);
      }
      children.push_back(child);
    }
    for (const pid_t child : children) {
      int status = 0;
      QCOMPARE(waitpid(child, &status, 0), child);
      QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, "an applying process failed");
    }
    const Registry reg = Registry::load(file_);
    QCOMPARE(reg.size(), std::size_t(kProcs * kRuns));
    for (int m = 1; m <= kProcs * kRuns; ++m) QVERIFY2(reg.find("gemm", key(m)), key(m).c_str());
  }

  void killDuringApply() {
    // Two runs that replace each other's entries; a child applies them alternately (forced)
    // until it is killed. Whenever that happens, the registry must be one of the two states.
    const RunResults a = run("a", {result(1, 16, around(1000, 0.01)), result(2, 16, around(900, 0.01)),
                                   result(4, 16, around(800, 0.01)), result(8, 16, around(700, 0.01))});
    const RunResults b = run("b", {result(1, 64, around(2000, 0.01)), result(2, 64, around(1900, 0.01)),
                                   result(4, 64, around(1800, 0.01)), result(8, 64, around(1700, 0.01))});
    ApplyOptions force;
    force.force = true;
    apply_run(b, root_, force);
    const nlohmann::json state_b = nlohmann::json::parse(read_text_file(file_));
    apply_run(a, root_, force);
    const nlohmann::json state_a = nlohmann::json::parse(read_text_file(file_));
    QVERIFY(state_a != state_b);

    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> delay_us(500, 80000);  // an apply takes milliseconds (fsyncs)
    int saw_a = 0, saw_b = 0, mid_write = 0;                  // mid_write: kills that left a temp file behind
    for (int round = 0; round < 12; ++round) {
      const pid_t child = fork();
      QVERIFY(child >= 0);
      if (child == 0) {
        try {
          for (;;) {
            apply_run(b, root_, force);
            apply_run(a, root_, force);
          }
        } catch (...) {
          _exit(3);
        }
      }
      usleep(static_cast<useconds_t>(delay_us(rng)));
      kill(child, SIGKILL);
      int status = 0;
      QCOMPARE(waitpid(child, &status, 0), child);
      QVERIFY2(WIFSIGNALED(status), "the applying child failed before it was killed");

      const nlohmann::json now = nlohmann::json::parse(read_text_file(file_), nullptr, false);
      QVERIFY2(!now.is_discarded(), "the registry is not valid JSON after the kill");
      QVERIFY2(now == state_a || now == state_b, "the registry is neither of the two states");
      (now == state_a ? saw_a : saw_b)++;
      const nlohmann::json backup = nlohmann::json::parse(read_text_file(file_.string() + ".bak"), nullptr, false);
      QVERIFY2(backup == state_a || backup == state_b, "the backup is neither of the two states");
      QCOMPARE(Registry::load(file_).size(), std::size_t(4));
      for (const auto& e : fs::directory_iterator(file_.parent_path())) {
        const std::string name = e.path().filename().string();
        const bool temp = name.starts_with(".test-cpu.json") && contains(name, ".tmp.");
        if (temp) {
          ++mid_write;
          fs::remove(e.path());
        }
        const bool known = name == "test-cpu.json" || name == "test-cpu.json.bak" || name == ".test-cpu.json.lock";
        QVERIFY2(known || temp, name.c_str());
      }
    }
    qInfo("killed 12 times: registry held run a %d times, run b %d times; %d kills mid-write", saw_a, saw_b, mid_write);
  }
};

QTEST_APPLESS_MAIN(TestDiffApply)
#include "test_diff_apply.moc"
