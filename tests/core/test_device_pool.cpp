// The tuner over several identical devices (DevicePool): configs spread over the devices and
// measured concurrently, each once, with the same trials (and, for a model-guided strategy, the
// same choices) as on one device; a lost device, a cancel and a device of another model.
#include <QtTest>
#include <atomic>
#include <set>

#include "axpy_backend.h"
#include "ktune/error.h"
#include "ktune/tuner.h"

using namespace ktune;
using namespace ktune::test;

namespace {

// An axpy device that counts the configs it measured.
class CountingSession : public ProblemSession {
 public:
  CountingSession(std::unique_ptr<ProblemSession> inner, std::atomic<int>& count)
      : inner_(std::move(inner)), count_(count) {}
  std::unique_ptr<PreparedKernel> prepare(const Config& c) override { return inner_->prepare(c); }
  Validation validate(PreparedKernel& k, const Tolerance& t) override { return inner_->validate(k, t); }
  double sample(PreparedKernel& k, const SampleRequest& r) override { return inner_->sample(k, r); }
  Measured validate_and_measure(PreparedKernel& k, const Tolerance& t, const MeasureSettings& s,
                                std::optional<double> best) override {
    ++count_;
    return inner_->validate_and_measure(k, t, s, best);
  }

 private:
  std::unique_ptr<ProblemSession> inner_;
  std::atomic<int>& count_;
};

class CountingBackend : public AxpyBackend {
 public:
  std::unique_ptr<ProblemSession> open(const DeviceInfo& d, const KernelFamily& f, const Problem& p,
                                       std::uint64_t seed) override {
    return std::make_unique<CountingSession>(AxpyBackend::open(d, f, p, seed), measured);
  }
  std::atomic<int> measured{0};
};

std::vector<Lane> lanes(std::vector<CountingBackend>& devices) {
  std::vector<Lane> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    DeviceInfo d = devices[i].devices()[0];
    d.index = static_cast<int>(i);
    out.push_back({&devices[i], d});
  }
  return out;
}

std::vector<std::string> trialKeys(const Recorder& rec) {
  std::vector<std::string> out;
  for (const auto& f : rec.all<event::TrialFinished>()) out.push_back(f.trial.problem_key + " " + f.trial.config.key());
  return out;
}

// 9 configs per problem, each a few ms: long enough for both devices to take a share.
SearchSpace slowSpace() {
  return SearchSpace({{"unroll", {1, 2, 4}, ""}, {"chunk", {64, 256, 1024}, ""}, {"delay_us", {300}, ""}}, {});
}

}  // namespace

class TestDevicePool : public QObject {
  Q_OBJECT
 private slots:
  void twoDevicesShareTheTrialsOfOneDevice() {
    std::vector<CountingBackend> one(1), two(2);
    Recorder rec1, rec2;
    Tuner(lanes(one)).run(request(one[0], "n=4096,8192", slowSpace()), rec1);
    const RunSummary s = Tuner(lanes(two)).run(request(two[0], "n=4096,8192", slowSpace()), rec2);
    QCOMPARE(two[0].measured + two[1].measured, 18);
    QVERIFY2(two[0].measured > 0 && two[1].measured > 0,
             qPrintable(
                 QString("device 0 measured %1, device 1 %2").arg(two[0].measured.load()).arg(two[1].measured.load())));
    auto k1 = trialKeys(rec1), k2 = trialKeys(rec2);
    std::sort(k1.begin(), k1.end());
    std::sort(k2.begin(), k2.end());
    QVERIFY(k1 == k2);
    // Ids are unique, a trial starts before it finishes, and progress counts every trial.
    std::set<std::int64_t> started, finished;
    for (const auto& e : rec2.events) {
      if (const auto* st = std::get_if<event::TrialStarted>(&e)) QVERIFY(started.insert(st->id).second);
      if (const auto* f = std::get_if<event::TrialFinished>(&e)) {
        QVERIFY(started.count(f->trial.id));
        QVERIFY(finished.insert(f->trial.id).second);
      }
    }
    QCOMPARE(finished.size(), std::size_t(18));
    QCOMPARE(rec2.all<event::Progress>().back().done, std::uint64_t(18));
    QString counts;
    for (const auto& [status, n] : s.status_counts)
      counts += QString("%1=%2 ").arg(QString::fromStdString(status)).arg(n);
    QVERIFY2(s.status_counts.at("ok") == 18, qPrintable(counts));
    for (const auto& r : s.results) QVERIFY(r.best.has_value());
  }

  // The devices' answers reach the strategy in the order it proposed the configs: a model-guided
  // search takes the same path on two devices as on one.
  void aModelGuidedStrategyChoosesAsOnOneDevice() {
    std::vector<CountingBackend> one(1), two(2);
    for (auto* b : {&one[0], &two[0], &two[1]}) b->modelled = true;
    const SearchSpace space(
        {{"unroll", {1, 2, 4}, ""}, {"chunk", {64, 128, 256, 512, 1024, 2048}, ""}, {"pad", {0, 1, 2, 3, 4}, ""}}, {});
    Recorder rec1, rec2;
    auto req = request(one[0], "n=512", space);
    req.strategy = {"local", 30, 3};
    Tuner(lanes(one)).run(req, rec1);
    Tuner(lanes(two)).run(req, rec2);
    auto k1 = trialKeys(rec1), k2 = trialKeys(rec2);
    QCOMPARE(k1.size(), std::size_t(30));
    std::sort(k1.begin(), k1.end());
    std::sort(k2.begin(), k2.end());
    QVERIFY(k1 == k2);
  }

  void aLostDeviceEndsTheRunAndStopsTheOthers() {
    std::vector<CountingBackend> two(2);
    Recorder rec;
    auto req = request(
        two[0], "n=4096",
        SearchSpace(
            {{"lose_device", {0, 1}, ""}, {"unroll", {1, 2, 4}, ""}, {"chunk", {64, 256}, ""}, {"delay_us", {200}, ""}},
            {}));
    Tuner tuner(lanes(two));
    QVERIFY_THROWS_EXCEPTION(RunError, tuner.run(req, rec));
    QCOMPARE(rec.all<event::RunFailed>().size(), std::size_t(1));
  }

  void cancelStopsEveryDevice() {
    std::vector<CountingBackend> two(2);
    Tuner tuner(lanes(two));
    Recorder rec;
    rec.hook = [&](const TuneEvent& e) {
      if (std::holds_alternative<event::TrialFinished>(e)) tuner.cancel();
    };
    const RunSummary s = tuner.run(request(two[0], "n=4096,8192", slowSpace()), rec);
    QVERIFY(s.cancelled);
    QVERIFY(rec.all<event::TrialFinished>().size() <= 4);  // the ones in flight finish; no new one starts
    QCOMPARE(rec.all<event::TrialStarted>().size(), rec.all<event::TrialFinished>().size());
  }

  void devicesOfAnotherModelAreRefused() {
    std::vector<CountingBackend> two(2);
    auto l = lanes(two);
    l[1].device.name = "Another Device";
    QVERIFY_THROWS_EXCEPTION(InputError, Tuner{l});
  }
};

QTEST_GUILESS_MAIN(TestDevicePool)
#include "test_device_pool.moc"
