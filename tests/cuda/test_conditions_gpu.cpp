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

// The run in `run`: every ok trial, the winner, each re-measured config and cuBLAS carry their
// conditions where NVML is, and none anywhere where it is not.
void check_run(const fs::path& run, bool nvml, const std::string& how) {
  std::size_t ok = 0;
  for (const Trial& t : RunStore::read_trials(run)) {
    if (t.status != TrialStatus::Ok) continue;
    ++ok;
    if (nvml)
      check_plausible(conditions_of(t.metrics), how + ": trial " + t.config.key());
    else
      CHECK_MSG(conditions_of(t.metrics).empty(), how + ": " + t.config.key());
  }
  CHECK_MSG(ok > 0, how);
  const RunResults saved = RunStore::read_results(run);
  CHECK_MSG(saved.entries.size() == 1, how);
  if (saved.entries.empty()) return;
  const ResultEntry& e = saved.entries.front();
  CHECK_MSG(e.baseline.has_value(), how);
  std::string round;
  for (const auto& m : e.remeasured) round += "\n  " + m.config.key();
  const auto winner = std::find_if(e.remeasured.begin(), e.remeasured.end(),
                                   [&](const Remeasured& m) { return m.config.same_values(e.config); });
  CHECK_MSG(winner != e.remeasured.end(),
            how + ": the winner " + e.config.key() + " is not among the re-measured:" + round);
  if (nvml) {
    check_plausible(e.conditions, how + ": the winner");
    check_plausible(e.baseline_conditions, how + ": cuBLAS");
    for (const auto& m : e.remeasured) check_plausible(m.conditions, how + ": re-measured " + m.config.key());
    // The winner's time is its re-measure's: so are its conditions.
    if (winner != e.remeasured.end()) CHECK_MSG(e.conditions == winner->conditions, how);
  } else {
    CHECK_MSG(e.conditions.empty() && e.baseline_conditions.empty(), how);
  }
  std::printf("%s: %zu ok trials; winner %s %.1f us at %s; cuBLAS at %s\n", how.c_str(), ok, e.config.key().c_str(),
              e.stats.median_ns / 1e3, describe(e.conditions).c_str(), describe(e.baseline_conditions).c_str());
}

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_conditions_gpu");
  const bool nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr;
  std::printf("NVML %s\n",
              nvml ? "present: every time must carry its conditions" : "absent: no time may carry conditions");
  const fs::path root = fs::temp_directory_path() / ("ktune_conditions_" + std::to_string(::getpid()));
  fs::remove_all(root);
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
  req.run_dir = root / "in_process";
  Quiet quiet;
  Tuner(*gpu.backend, gpu.device).run(req, quiet);
  check_run(req.run_dir, nvml, "in process");

  // The same through `ktune tune`, which measures in a `ktune worker` child on CUDA: the samples'
  // answers carry the child's readings to the re-measure.
  const char* cli = std::getenv("KTUNE_CLI");
  CHECK_MSG(cli != nullptr, "KTUNE_CLI names the ktune binary (ctest sets it)");
  if (cli) {
    const std::string command = std::string(cli) +
                                " tune gemm --backend cuda --isolate --shape 'M=1024 N=2048 K=2048 dtype=f16'"
                                " --strategy random --budget 6 --seed 1 -q --output-dir " +
                                root.string() + " --run-name isolated > " + (root / "isolated.log").string() + " 2>&1";
    CHECK_MSG(std::system(command.c_str()) == 0, command);
    check_run(root / "isolated", nvml, "in a worker");
  }
  fs::remove_all(root);
  return ktune_test::finish("test_conditions_gpu");
}
