// The tuner loop on a small real backend whose configs fail the ways kernels fail in practice:
// a missing specialization (compile_error), a scratch buffer beyond the limit (launch_error),
// an unrolled loop without its remainder (wrong_result), a bounds-checked out-of-range write
// (crashed), per-element overhead too slow for the cap (timeout) or the best (slow_abort).
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <thread>

#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

using namespace ktune;
using Clock = std::chrono::steady_clock;

namespace {

// y = a*x + y over n floats, processed in chunks with an unrolled inner loop.
struct AxpyKernel : PreparedKernel {
  int unroll = 1, chunk = 1, tail = 1, stride = 1, delay_us = 0, lose_device = 0;
  bool baseline = false;
};

class AxpySession : public ProblemSession {
 public:
  explicit AxpySession(std::int64_t n) : x_(static_cast<std::size_t>(n)), y0_(x_.size()), y_(x_.size()), ref_(x_.size()) {
    for (std::size_t i = 0; i < x_.size(); ++i) {
      x_[i] = static_cast<float>(i % 17) * 0.25f;
      y0_[i] = static_cast<float>(i % 5);
      ref_[i] = 2.0f * x_[i] + y0_[i];
    }
  }
  std::unique_ptr<PreparedKernel> prepare(const Config& c) override {
    auto k = std::make_unique<AxpyKernel>();
    k->unroll = static_cast<int>(c.get("unroll"));
    k->chunk = static_cast<int>(c.get("chunk"));
    k->tail = static_cast<int>(c.get_or("tail", 1));
    k->stride = static_cast<int>(c.get_or("stride", 1));
    k->delay_us = static_cast<int>(c.get_or("delay_us", 0));
    k->lose_device = static_cast<int>(c.get_or("lose_device", 0));
    if (k->unroll != 1 && k->unroll != 2 && k->unroll != 4)
      throw TrialFailure(TrialStatus::CompileError, "no specialization for unroll=" + std::to_string(k->unroll));
    if (k->chunk * 4 > 64 * 1024)
      throw TrialFailure(TrialStatus::LaunchError, "scratch of " + std::to_string(k->chunk * 4) + " bytes exceeds 65536");
    return k;
  }
  Validation validate(PreparedKernel& pk, const Tolerance& tol) override {
    // As a GPU whose context a fault poisoned: nothing can run in this process any more.
    if (static_cast<AxpyKernel&>(pk).lose_device) throw RunError("device lost; run again with --resume");
    run(static_cast<AxpyKernel&>(pk), Clock::time_point::max());
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < y_.size(); ++i) {
      const double err = std::abs(double(y_[i]) - ref_[i]);
      worst = std::max(worst, err);
      if (err > tol.atol + tol.rtol * std::abs(ref_[i])) ++bad;
    }
    const double frac = double(bad) / double(y_.size());
    if (frac > tol.max_mismatch_fraction)
      throw TrialFailure(TrialStatus::WrongResult, "max abs error " + std::to_string(worst));
    return {worst, frac};
  }
  // The baseline: the plain loop, no unrolling, small chunks.
  std::unique_ptr<PreparedKernel> prepare_baseline() override {
    auto k = std::make_unique<AxpyKernel>();
    k->chunk = 64;
    k->baseline = true;
    return k;
  }
  std::string baseline_name() const override { return "plain loop"; }
  // Which kernel each sample ran: 'B' for the baseline, '.' for a config.
  std::string sampled;

  double sample(PreparedKernel& pk, const SampleRequest& r) override {
    sampled += static_cast<AxpyKernel&>(pk).baseline ? 'B' : '.';
    const auto t0 = Clock::now();
    for (int i = 0; i < r.launches; ++i) run(static_cast<AxpyKernel&>(pk), r.deadline);
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / r.launches;
  }

 private:
  void run(const AxpyKernel& k, Clock::time_point deadline) {
    y_ = y0_;
    const std::size_t n = y_.size();
    for (std::size_t c0 = 0; c0 < n; c0 += static_cast<std::size_t>(k.chunk)) {
      if (k.delay_us) std::this_thread::sleep_for(std::chrono::microseconds(k.delay_us));
      if (Clock::now() > deadline) throw TrialFailure(TrialStatus::Timeout, "deadline passed");
      const std::size_t end = std::min(n, c0 + static_cast<std::size_t>(k.chunk));
      std::size_t i = c0;
      for (; i + static_cast<std::size_t>(k.unroll) <= end; i += static_cast<std::size_t>(k.unroll))
        for (int u = 0; u < k.unroll; ++u) y_.at((i + u) * static_cast<std::size_t>(k.stride)) += 2.0f * x_[i + u];
      if (k.tail)
        for (; i < end; ++i) y_.at(i * static_cast<std::size_t>(k.stride)) += 2.0f * x_[i];
    }
  }
  std::vector<float> x_, y0_, y_, ref_;
};

class AxpyBackend : public Backend {
 public:
  std::string name() const override { return "testaxpy"; }
  std::vector<DeviceInfo> devices() override {
    DeviceInfo d;
    d.backend = "testaxpy";
    d.name = "Test Axpy Device";
    d.properties = {{"scratch_bytes", 65536}};
    return {d};
  }
  std::vector<KernelFamily> families() const override {
    KernelFamily f;
    f.name = "axpy";
    f.backend = "testaxpy";
    f.key_fields = {{"n", true, "", {}, "elements"}};
    f.bucket_field = "n";
    f.flops_expr = "2*n";
    f.bytes_expr = "12*n";
    f.default_space = SearchSpace({{"unroll", {1, 2, 4}, ""}, {"chunk", {64, 256, 1024}, ""}}, {});
    return {f};
  }
  std::unique_ptr<ProblemSession> open(const DeviceInfo&, const KernelFamily&, const Problem& p, std::uint64_t) override {
    ++opened;
    auto s = std::make_unique<AxpySession>(p.num("n"));
    last = s.get();
    return s;
  }
  int opened = 0;
  AxpySession* last = nullptr;  // the latest session, alive while its problem runs
};

struct Recorder : TuneObserver {
  std::vector<TuneEvent> events;
  std::function<void(const TuneEvent&)> hook;
  void on_event(const TuneEvent& e) override {
    events.push_back(e);
    if (hook) hook(e);
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& e : events)
      if (auto* p = std::get_if<T>(&e)) out.push_back(*p);
    return out;
  }
};

TuneRequest request(AxpyBackend& b, const std::string& shape, SearchSpace space) {
  TuneRequest r;
  r.family = b.family("axpy");
  r.problems = expand_shape(r.family, shape);
  r.space = std::move(space);
  r.measure.warmup_ms = 1;
  r.measure.min_sample_ms = 0.2;
  r.measure.max_ms_per_config = 500;
  r.measure.slow_abort = false;
  r.compile_threads = 2;
  return r;
}

TrialStatus statusOf(const Recorder& rec, const std::string& key) {
  for (const auto& f : rec.all<event::TrialFinished>())
    if (f.trial.config.key() == key) return f.trial.status;
  throw std::runtime_error("no trial " + key);
}

}  // namespace

class TestTuner : public QObject {
  Q_OBJECT
 private slots:
  void everyConfigBecomesATrialAndTheBestWins() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=1000,4096", b.family("axpy").default_space);
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(s.results.size(), std::size_t(2));
    QCOMPARE(rec.all<event::TrialFinished>().size(), std::size_t(18));
    QCOMPARE(s.status_counts.at("ok"), std::uint64_t(18));
    for (const auto& r : s.results) {
      QVERIFY(r.best.has_value());
      for (const auto& f : rec.all<event::TrialFinished>())
        if (f.trial.problem_key == r.problem.key()) QVERIFY(r.best->stats.median_ns <= f.trial.stats.median_ns);
      QVERIFY(r.best->tflops > 0);
      QCOMPARE(r.space_total, std::uint64_t(9));
    }
    const auto prog = rec.all<event::Progress>();
    QCOMPARE(prog.back().done, std::uint64_t(18));
    QCOMPARE(prog.back().total, std::uint64_t(18));
    QVERIFY(std::holds_alternative<event::RunStarted>(rec.events.front()));
    QVERIFY(std::holds_alternative<event::RunFinished>(rec.events.back()));
    QCOMPARE(b.opened, 2);
  }

  void baselineIsTimedInAlternationWithTheBestAfterTheSearch() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    std::string sampled;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::ProblemFinished>(e)) sampled = b.last->sampled;
    };
    const RunSummary s = tuner.run(request(b, "n=4096", b.family("axpy").default_space), rec);
    const ProblemResult& r = s.results.at(0);
    QCOMPARE(r.baseline_name, std::string("plain loop"));
    QVERIFY(r.baseline && r.best_paired && r.best);
    QVERIFY(r.baseline->count >= 5 && r.best_paired->count >= 5);
    QCOMPARE(*r.speedup(), r.baseline->median_ns / r.best_paired->median_ns);
    // No baseline sample before the search ends; then best and baseline alternate.
    const auto first = sampled.find('B');
    QVERIFY(first != std::string::npos && first > 9);
    QVERIFY(sampled.find(".B.B.B.B") != std::string::npos);
    QVERIFY(sampled.substr(first).find("..") == std::string::npos);
  }

  void failingConfigsAreRecordedAndTheRunGoesOn() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    // n = 1001 is not a multiple of the unroll factors, so dropping the tail is visible.
    SearchSpace space({{"unroll", {2, 3}, ""}, {"chunk", {64, 100000}, ""}, {"tail", {0, 1}, ""}, {"stride", {1, 2}, ""}},
                      {{"!(unroll == 3 && tail == 0)", "no tail-less variant of unroll 3"}});
    auto req = request(b, "n=1001", space);
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(statusOf(rec, "unroll=3,chunk=64,tail=1,stride=1"), TrialStatus::CompileError);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=100000,tail=1,stride=1"), TrialStatus::LaunchError);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=0,stride=1"), TrialStatus::WrongResult);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=1,stride=2"), TrialStatus::Crashed);
    QCOMPARE(statusOf(rec, "unroll=3,chunk=64,tail=0,stride=1"), TrialStatus::Pruned);
    QCOMPARE(statusOf(rec, "unroll=2,chunk=64,tail=1,stride=1"), TrialStatus::Ok);
    QCOMPARE(s.results[0].best->config.key(), std::string("unroll=2,chunk=64,tail=1,stride=1"));
    for (const auto& f : rec.all<event::TrialFinished>())
      if (f.trial.status != TrialStatus::Ok) QVERIFY2(!f.trial.error.empty(), to_string(f.trial.status));
  }

  void timeCapAndSlowAbort() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {4}, ""}, {"chunk", {4096, 16}, ""}, {"delay_us", {0, 200}, ""}}, {});
    auto req = request(b, "n=4096", space);
    req.measure.max_ms_per_config = 30;  // chunk=16 with 200 us per chunk needs 50 ms per launch
    req.measure.slow_abort = true;
    req.measure.noise_target = 1e-6;     // keep sampling so slow_abort can decide
    const RunSummary s = tuner.run(req, rec);
    QCOMPARE(statusOf(rec, "unroll=4,chunk=4096,delay_us=0"), TrialStatus::Ok);
    QCOMPARE(statusOf(rec, "unroll=4,chunk=16,delay_us=200"), TrialStatus::Timeout);
    // One 200 us pause per launch on a ~2 us kernel: far slower than the best, dropped early.
    QCOMPARE(statusOf(rec, "unroll=4,chunk=4096,delay_us=200"), TrialStatus::SlowAbort);
  }

  void impossibleSpaceFailsBeforeMeasuring() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {1, 2}, ""}, {"chunk", {64}, ""}}, {{"chunk * 4 > scratch_bytes", "needs a big chunk"}});
    auto req = request(b, "n=100", space);
    try {
      tuner.run(req, rec);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("impossible search space"));
      QVERIFY(QString(e.what()).contains("chunk * 4 > scratch_bytes"));
    }
    QCOMPARE(b.opened, 0);
    QVERIFY(rec.events.empty());
  }

  void unknownVariableFailsBeforeMeasuring() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=100", SearchSpace({{"unroll", {1}, ""}, {"chunk", {64}, ""}}, {{"chunk <= l9_bytes", ""}}));
    QVERIFY_THROWS_EXCEPTION(InputError, tuner.run(req, rec));
    QCOMPARE(b.opened, 0);
  }

  void cancelStopsTheRun() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    int finished = 0;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::TrialFinished>(e) && ++finished == 3) tuner.cancel();
    };
    auto req = request(b, "n=1000,2000,3000", b.family("axpy").default_space);
    const RunSummary s = tuner.run(req, rec);
    QVERIFY(s.cancelled);
    QCOMPARE(finished, 3);
    QVERIFY(std::holds_alternative<event::RunFinished>(rec.events.back()));
  }

  void pauseHoldsMeasurement() {
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    tuner.set_paused(true);
    std::thread resume([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      tuner.set_paused(false);
    });
    const auto t0 = Clock::now();
    auto req = request(b, "n=100", SearchSpace({{"unroll", {1}, ""}, {"chunk", {64}, ""}}, {}));
    tuner.run(req, rec);
    resume.join();
    QVERIFY(Clock::now() - t0 >= std::chrono::milliseconds(290));
    QCOMPARE(rec.all<event::TrialFinished>().size(), std::size_t(1));
  }

  void lostDeviceEndsTheRunAsFailed() {
    QTemporaryDir dir;
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=512", SearchSpace({{"lose_device", {0, 1}, ""}, {"unroll", {1, 2}, ""}, {"chunk", {64}, ""}}, {}));
    req.run_dir = std::filesystem::path(dir.path().toStdString()) / "lost";
    QVERIFY_THROWS_EXCEPTION(RunError, tuner.run(req, rec));
    QCOMPARE(rec.all<event::RunFailed>().size(), std::size_t(1));
    // The two configs measured before the loss are kept; none is recorded as crashed.
    const auto trials = RunStore::read_trials(req.run_dir);
    QCOMPARE(trials.size(), std::size_t(2));
    for (const auto& t : trials) QCOMPARE(t.status, TrialStatus::Ok);
    QCOMPARE(RunStore::read_metadata(req.run_dir).state, std::string("failed"));
  }

  void runFolderHoldsEveryTrial() {
    QTemporaryDir dir;
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    SearchSpace space({{"unroll", {1, 2, 3}, ""}, {"chunk", {64, 256}, ""}}, {{"chunk >= 128 || unroll == 1", ""}});
    auto req = request(b, "n=512", space);
    req.run_dir = std::filesystem::path(dir.path().toStdString()) / "r1";
    tuner.run(req, rec);
    const auto trials = RunStore::read_trials(req.run_dir);
    QCOMPARE(trials.size(), std::size_t(6));  // 4 measured + 2 pruned
    const auto md = RunStore::read_metadata(req.run_dir);
    QCOMPARE(md.state, std::string("finished"));
    QCOMPARE(md.family, std::string("axpy"));
    const auto results = RunStore::read_results(req.run_dir);
    QCOMPARE(results.entries.size(), std::size_t(1));

    // Resuming a finished run measures nothing again and duplicates nothing.
    Recorder again;
    req.resume = true;
    tuner.run(req, again);
    QCOMPARE(again.all<event::TrialFinished>().size(), std::size_t(0));
    QCOMPARE(RunStore::read_trials(req.run_dir).size(), std::size_t(6));
    QCOMPARE(RunStore::read_results(req.run_dir).entries.at(0).config, results.entries.at(0).config);
  }
};

QTEST_APPLESS_MAIN(TestTuner)
#include "test_tuner.moc"
