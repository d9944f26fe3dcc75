// The device's conditions beside every time a GPU run records: each trial's SM clock, power and
// limits (trials.csv), the winner's of the measurement it was chosen by and each re-measured
// config's (results.json), and cuBLAS's. Read through NVML where the driver has it; where it does
// not, no time carries a made-up clock.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "check.h"
#include "gpu.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

struct Quiet : TuneObserver {
  void on_event(const TuneEvent&) override {}
};

// A clock and power any GPU of the last decade reports under load.
void check_plausible(const Conditions& c, const std::string& what) {
  CHECK_MSG(c.count(kSmClockMhz) && c.at(kSmClockMhz) > 100 && c.at(kSmClockMhz) < 4000, what + ": " + describe(c));
  CHECK_MSG(!c.count(kPowerW) || (c.at(kPowerW) > 1 && c.at(kPowerW) < 2000), what + ": " + describe(c));
  CHECK_MSG(c.count(kClockLimited) && c.at(kClockLimited) >= 0 && c.at(kClockLimited) <= 1, what);
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_conditions_gpu");
  const bool nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr;
  std::printf("NVML %s\n",
              nvml ? "present: every time must carry its conditions" : "absent: no time may carry conditions");
  const fs::path run = fs::temp_directory_path() / ("ktune_conditions_" + std::to_string(::getpid()));
  fs::remove_all(run);
  TuneRequest req;
  req.family = gpu.backend->family("gemm");
  req.problems = {
      ktune_test::make_problem(req.family, {{"M", "1024"}, {"N", "2048"}, {"K", "2048"}, {"dtype", "f16"}})};
  req.space = req.family.default_space;
  req.strategy.kind = "random";
  req.strategy.budget = 6;
  req.strategy.seed = 1;
  req.measure.remeasure_top = 3;
  req.compile_threads = 2;
  req.run_dir = run;
  Quiet quiet;
  const RunSummary s = Tuner(*gpu.backend, gpu.device).run(req, quiet);
  const ProblemResult& r = s.results.at(0);
  CHECK(r.best.has_value());
  CHECK(!r.remeasured.empty());
  CHECK(r.baseline.has_value());

  std::size_t ok = 0;
  for (const Trial& t : RunStore::read_trials(run)) {
    if (t.status != TrialStatus::Ok) continue;
    ++ok;
    if (nvml)
      check_plausible(conditions_of(t.metrics), "trial " + t.config.key());
    else
      CHECK_MSG(conditions_of(t.metrics).empty(), t.config.key());
  }
  CHECK(ok > 0);
  const RunResults saved = RunStore::read_results(run);
  const ResultEntry& e = saved.entries.at(0);
  const auto winner =
      std::find_if(e.remeasured.begin(), e.remeasured.end(), [&](const Remeasured& m) { return m.config == e.config; });
  CHECK(winner != e.remeasured.end());
  if (nvml) {
    check_plausible(e.conditions, "the winner");
    check_plausible(e.baseline_conditions, "cuBLAS");
    for (const auto& m : e.remeasured) check_plausible(m.conditions, "re-measured " + m.config.key());
    // The winner's time is its re-measure's: so are its conditions.
    if (winner != e.remeasured.end()) CHECK(e.conditions == winner->conditions);
  } else {
    CHECK(e.conditions.empty() && e.baseline_conditions.empty());
  }
  std::printf("%zu ok trials; winner %s %.1f us at %s; cuBLAS at %s\n", ok, e.config.key().c_str(),
              e.stats.median_ns / 1e3, describe(e.conditions).c_str(), describe(e.baseline_conditions).c_str());
  fs::remove_all(run);
  return ktune_test::finish("test_conditions_gpu");
}
