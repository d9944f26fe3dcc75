#pragma once
// A backend for tests of how a search ends, whose configs take fixed, scripted times: one lucky in
// the search and slow after, steady ones, and a noisy one.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ktune/backend.h"
#include "ktune/tuner.h"

namespace ktune::test {

// Configs x=1..5. x=1 is lucky during the search (its first 6 samples on the backend: 90 ns) and
// slow ever after (120 ns, in later sessions too); x=2 always takes 100 ns, x=3 110 ns, x=4 200
// ns; x=5 is noisy: 50, 50, 500 ns over and over (a median of 50 ns in any five samples, which
// never reach a noise target). Which config each sample ran is kept, to see the alternation. The
// device heats as it works: the n-th sample of a session runs at 1,980 - n MHz, limited below 1,960.
struct Fixed : PreparedKernel {
  int x = 0;
  std::vector<ConditionsReading> readings;
};
class LuckySession : public ProblemSession {
 public:
  LuckySession(int& lucky_samples, std::string& order) : order(order), lucky_samples(lucky_samples) {}
  std::unique_ptr<PreparedKernel> prepare(const Config& c) override {
    auto k = std::make_unique<Fixed>();
    k->x = static_cast<int>(c.get("x"));
    return k;
  }
  Validation validate(PreparedKernel&, const Tolerance&) override { return {}; }
  double sample(PreparedKernel& pk, const SampleRequest&) override {
    auto& k = static_cast<Fixed&>(pk);
    const int x = k.x;
    order += static_cast<char>('0' + x);
    const double mhz = 1980.0 - static_cast<double>(order.size());
    k.readings.push_back({mhz, 300.0 + x, mhz < 1960});
    switch (x) {
      case 1:
        return ++lucky_samples <= 6 ? 90 : 120;
      case 2:
        return 100;
      case 3:
        return 110;
      case 5:
        return ++noisy_samples % 3 ? 50 : 500;
      default:
        return 200;
    }
  }
  Conditions take_conditions(PreparedKernel& pk) override {
    auto& k = static_cast<Fixed&>(pk);
    return summarize_conditions(std::exchange(k.readings, {}));
  }
  std::string& order;

 private:
  int& lucky_samples;
  int noisy_samples = 0;
};

class LuckyBackend : public Backend {
 public:
  std::string name() const override { return "testlucky"; }
  std::vector<DeviceInfo> devices() override {
    DeviceInfo d;
    d.backend = "testlucky";
    d.name = "Lucky Device";
    return {d};
  }
  std::vector<KernelFamily> families() const override {
    KernelFamily f;
    f.name = "lucky";
    f.backend = "testlucky";
    f.key_fields = {{"n", true, "", {}, "elements"}};
    f.default_space = SearchSpace({{"x", {1, 2, 3, 4}, ""}}, {});
    return {f};
  }
  std::unique_ptr<ProblemSession> open(const DeviceInfo&, const KernelFamily&, const Problem&, std::uint64_t) override {
    return std::make_unique<LuckySession>(lucky_samples, order);
  }
  int lucky_samples = 0;
  std::string order;  // the sessions' samples, kept by the backend: a session
                      // ends with its problem
};

// A run of configs `xs` of problem n=1: five samples each, no warm-up, no slow abort, the search's
// best `top` re-measured, saved in `run_dir`.
inline TuneRequest lucky_request(const LuckyBackend& b, std::vector<ParamValue> xs, int top,
                                 std::filesystem::path run_dir) {
  TuneRequest req;
  req.family = b.family("lucky");
  req.problems = expand_shape(req.family, "n=1");
  req.space = SearchSpace({{"x", std::move(xs), ""}}, {});
  req.measure.warmup_ms = 0;
  req.measure.settle_ms = 0;
  req.measure.min_samples = req.measure.max_samples = 5;
  req.measure.slow_abort = false;
  req.measure.remeasure_top = top;
  req.compile_threads = 1;
  req.run_dir = std::move(run_dir);
  return req;
}

}  // namespace ktune::test
