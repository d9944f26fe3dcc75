// Fault isolation on the GPU (issue 11): the faults spec tuned through a `ktune worker --backend
// cuda` child, as `ktune tune --isolate` does. The config that writes far out of bounds kills
// (or poisons) only the worker and is recorded `crashed`; the next config still validates and
// times, a wrong result is still `wrong_result`, and the run's best is the correct kernel.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "check.h"
#include "gpu.h"
#include "ktune/tuner.h"
#include "ktune/worker_client.h"

using namespace ktune;

namespace {

const std::filesystem::path kFaults = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/cuda/data/faults.json";

class Record : public TuneObserver {
 public:
  std::vector<Trial> trials;
  void on_event(const TuneEvent& e) override {
    if (auto* f = std::get_if<event::TrialFinished>(&e)) {
      std::printf("  MODE=%lld: %s %s\n", static_cast<long long>(f->trial.config.get("MODE")),
                  to_string(f->trial.status), f->trial.error.substr(0, 200).c_str());
      trials.push_back(f->trial);
    }
  }
};

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  // Only to skip without a GPU: the measuring happens in the worker.
  ktune_test::gpu_or_skip("test_worker_gpu");
  const char* cli = std::getenv("KTUNE_CLI");
  if (!cli || !std::filesystem::exists(cli)) {
    std::fprintf(stderr, "KTUNE_CLI must name the ktune executable (ctest sets it)\n");
    return 1;
  }
  worker::WorkerOptions opt;
  opt.argv = {cli, "worker", "--backend", "cuda", "--kernel-spec", kFaults.string()};
  worker::WorkerBackend backend(opt);
  const auto devices = backend.devices();
  CHECK(devices.size() == 1);
  const KernelFamily faults = backend.load_family_spec(kFaults);
  const int first_pid = backend.current_pid();

  TuneRequest req;
  req.family = faults;
  req.problems = {ktune_test::make_problem(faults, {{"n", "1048576"}})};
  // In this order: the fault first, then a correct kernel that must still validate and time, then
  // a wrong one, then a correct one with other threads.
  req.space = SearchSpace({{"MODE", {3, 0, 5}, ""}, {"THREADS", {256, 128}, ""}}, {});
  req.measure.max_ms_per_config = 200;
  req.measure.warmup_ms = 5;
  req.measure.slow_abort = false;  // every correct config is timed in full: `ok`
  Record rec;
  Tuner tuner(backend, devices.front());
  const RunSummary sum = tuner.run(req, rec);

  CHECK_MSG(rec.trials.size() == 6, std::to_string(rec.trials.size()) + " trials");
  bool crashed_before_ok = false, seen_crash = false;
  for (const Trial& t : rec.trials) {
    const auto m = t.config.get("MODE");
    const std::string what = t.config.key() + ": " + to_string(t.status) + " " + t.error;
    if (m == 3) {
      CHECK_MSG(t.status == TrialStatus::Crashed, what);
      seen_crash = true;
    } else if (m == 0) {
      CHECK_MSG(t.status == TrialStatus::Ok && t.stats.median_ns > 0 && t.mismatch_fraction == 0, what);
      crashed_before_ok |= seen_crash && t.status == TrialStatus::Ok;
    } else {
      CHECK_MSG(t.status == TrialStatus::WrongResult, what);
    }
  }
  CHECK_MSG(crashed_before_ok, "no correct config validated after the out-of-bounds write");
  CHECK(sum.results.size() == 1 && sum.results[0].best && sum.results[0].best->config.get("MODE") == 0);
  // A worker that answered `crashed` exits (a sticky fault can poison its process for good) and
  // a fresh one measures the next config.
  std::printf("worker restarts: %d (first pid %d, now %d)\n", backend.restarts(), first_pid, backend.current_pid());
  CHECK(backend.restarts() >= 1);
  return ktune_test::finish("test_worker_gpu");
}
