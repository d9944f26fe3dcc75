// Every failure status comes from a real bad config on the GPU: a source that does not compile,
// too much shared memory, too many threads, a kernel slower than the time cap, a wrong result
// (through the tuner: one trial each, and the run goes on), a tensor map over rows TMA cannot
// address, and last a write far out of bounds:
// a sticky fault recorded as `crashed`, never an abort.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "check.h"
#include "gpu.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/tuner.h"

using namespace ktune;
using ktune_test::status_of;

namespace {

const std::filesystem::path kFaults = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/cuda/data/faults.json";

Config mode(int m) { return Config({{"MODE", m}, {"THREADS", 256}}); }

// Prints each trial as it finishes: a hang shows where it is.
class Progress : public TuneObserver {
 public:
  void on_event(const TuneEvent& e) override {
    if (auto* t = std::get_if<event::TrialStarted>(&e)) std::printf("  trial %s ...\n", t->config.key().c_str());
    if (auto* f = std::get_if<event::TrialFinished>(&e)) std::printf("  ... %s\n", to_string(f->trial.status));
  }
};

}  // namespace

int main() {
  auto gpu = ktune_test::gpu_or_skip("test_failures_gpu");
  const KernelFamily faults = gpu.backend->load_family_spec(kFaults);
  const Problem p = ktune_test::make_problem(faults, {{"n", "1048576"}});
  const Tolerance tol;

  std::setvbuf(stdout, nullptr, _IONBF, 0);
  // Through the tuner: every mode but the fault becomes one trial with its status, and the run
  // finishes with MODE=0 as the best.
  {
    TuneRequest req;
    req.family = faults;
    req.problems = {p};
    req.space = SearchSpace({{"MODE", {0, 1, 2, 4, 5, 6}, ""}, {"THREADS", {256}, ""}}, {});
    req.measure.max_ms_per_config = 100;
    req.measure.warmup_ms = 5;
    Progress quiet;
    Tuner tuner(*gpu.backend, gpu.device);
    const RunSummary sum = tuner.run(req, quiet);
    auto count = [&](const char* status) { return sum.status_counts.count(status) ? sum.status_counts.at(status) : 0; };
    std::string counts;
    for (const auto& [k, v] : sum.status_counts) counts += k + "=" + std::to_string(v) + " ";
    CHECK_MSG(count("ok") == 1 && count("compile_error") == 1 && count("launch_error") == 2 && count("timeout") == 1 &&
                  count("wrong_result") == 1,
              counts);
    CHECK(sum.results.size() == 1 && sum.results[0].best && sum.results[0].best->config.get("MODE") == 0);
  }

  std::printf("step: %s\n", "auto s = gpu.backend->open(gpu.device, faults, p, 7);");
  auto s = gpu.backend->open(gpu.device, faults, p, 7);
  auto* info = dynamic_cast<GpuSessionInfo*>(s.get());
  CHECK(info != nullptr);
  auto good = s->prepare(mode(0));
  CHECK(status_of([&] { s->validate(*good, tol); }).first == TrialStatus::Ok);

  auto [st1, msg1] = status_of([&] { s->prepare(mode(1)); });
  CHECK_MSG(st1 == TrialStatus::CompileError, msg1);
  CHECK_MSG(msg1.find("faults.cu") != std::string::npos && msg1.find("error") != std::string::npos, msg1);

  auto [st2, msg2] = status_of([&] { s->prepare(mode(2)); });
  CHECK_MSG(st2 == TrialStatus::LaunchError && msg2.find("shared memory") != std::string::npos, msg2);

  auto [st6, msg6] = status_of([&] { s->prepare(mode(6)); });
  CHECK_MSG(st6 == TrialStatus::LaunchError && msg6.find("threads") != std::string::npos, msg6);

  std::printf("step: %s\n", "auto wrong = s->prepare(mode(5));");
  auto wrong = s->prepare(mode(5));
  auto [st5, msg5] = status_of([&] { s->validate(*wrong, tol); });
  CHECK_MSG(st5 == TrialStatus::WrongResult && msg5.find("elements") != std::string::npos, msg5);
  {
    // Validation runs on the device; the element it reports must be a real one: got = 1.5 * want.
    double got = 0, want = 0;
    const auto at = msg5.find("got ");
    CHECK_MSG(at != std::string::npos && std::sscanf(msg5.c_str() + at, "got %lf, want %lf", &got, &want) == 2, msg5);
    CHECK_MSG(std::abs(want) > 0.5 && std::abs(got - 1.5 * want) < 1e-5, msg5);
  }

  // 300 ms per launch against a 50 ms deadline.
  std::printf("step: %s\n", "auto slow = s->prepare(mode(4));");
  auto slow = s->prepare(mode(4));
  CHECK(status_of([&] { s->validate(*slow, tol); }).first == TrialStatus::Ok);
  SampleRequest r;
  r.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  auto [st4, msg4] = status_of([&] { s->sample(*slow, r); });
  CHECK_MSG(st4 == TrialStatus::Timeout, msg4);

  // The gemm family with a config its constraints would prune: asked directly, the backend
  // refuses it before launch.
  {
    const KernelFamily gemm = gpu.backend->family("gemm");
    const Problem gp = ktune_test::make_problem(gemm, {{"M", "16"}, {"N", "4096"}, {"K", "4096"}, {"dtype", "f16"}});
    auto gs = gpu.backend->open(gpu.device, gemm, gp, 1);
    Config big = gemm.default_config;
    for (auto [k, v] : {std::pair{"BM", 16}, {"WM", 16}, {"BN", 256}, {"WN", 64}, {"BK", 128}, {"STAGES", 5}})
      big.set(k, v);
    auto [stg, msgg] = status_of([&] { gs->prepare(big); });
    CHECK_MSG(stg == TrialStatus::LaunchError && msgg.find("shared memory") != std::string::npos, msgg);
  }
  // The Hopper kernel forced onto rows TMA cannot address (K = 1002 f16: 2004-byte rows, not a
  // multiple of 16): the tensor map is refused, and the config is a launch_error naming it.
  if (gpu.device.property("cc_major") == 9) {
    const KernelFamily gemm = gpu.backend->family("gemm");
    const Problem gp = ktune_test::make_problem(gemm, {{"M", "64"}, {"N", "520"}, {"K", "1002"}, {"dtype", "f16"}});
    auto gs = gpu.backend->open(gpu.device, gemm, gp, 1);
    Config tma = gemm.default_config;
    for (auto [k, v] : {std::pair{"BM", 64}, {"WM", 64}, {"BN", 64}, {"WN", 64}, {"WGMMA", 1}}) tma.set(k, v);
    auto [stt, msgt] = status_of([&] {
      auto k = gs->prepare(tma);
      gs->validate(*k, tol);
    });
    CHECK_MSG(stt == TrialStatus::LaunchError && msgt.find("tensor map tmA") != std::string::npos &&
                  msgt.find("16-byte aligned") != std::string::npos,
              msgt);
  }

  // Last, a sticky fault: the trial is `crashed`, never an abort. Then either the new context
  // works (kernels prepared before the fault are reloaded) or the driver keeps the fault for
  // the process and every later call says to resume in a new process (test_resume_gpu covers
  // resuming).
  std::printf("step: %s\n", "auto oob = s->prepare(mode(3));");
  auto oob = s->prepare(mode(3));
  auto [st3, msg3] = status_of([&] { s->validate(*oob, tol); });
  CHECK_MSG(st3 == TrialStatus::Crashed, msg3);
  CHECK(info->recoveries() == 1);
  try {
    const auto [after, why] = status_of([&] { s->validate(*good, tol); });
    CHECK_MSG(after == TrialStatus::Ok, why);
    std::printf("after the fault: a new context, validation passes again\n");
  } catch (const RunError& e) {
    CHECK(std::string(e.what()).find("--resume") != std::string::npos);
    CHECK_THROWS(RunError, s->prepare(mode(0)), "new process");
    std::printf("after the fault: this process cannot use the GPU any more (%s)\n", e.what());
  }
  return ktune_test::finish("test_failures_gpu");
}
