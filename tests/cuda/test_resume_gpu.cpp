// A GPU tuning run killed (SIGKILL) part-way, then resumed in a new process: the resumed run
// measures only the configs the first one had not recorded, and the finished run holds every
// config exactly once. The parent never touches CUDA (a forked child could not use it then).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "check.h"
#include "ktune/backends/cuda.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

class Count : public TuneObserver {
 public:
  std::size_t finished = 0;
  void on_event(const TuneEvent& e) override {
    if (std::holds_alternative<event::TrialFinished>(e)) ++finished;
  }
};

// Child: tunes gemm 16x2048x2048 into `dir`; writes "<measured> <planned valid>" to `report`.
int tune(const fs::path& dir, bool resume, const fs::path& cache, const fs::path& report) {
  auto backend = make_cuda_backend(CudaBackendOptions{cache});
  const auto devices = backend->devices();
  if (devices.empty()) {
    std::printf("test_resume_gpu skipped: no CUDA device (%s)\n", cuda_unavailable_reason().c_str());
    return 77;
  }
  const KernelFamily gemm = backend->family("gemm");
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", "16"}, {"N", "2048"}, {"K", "2048"}, {"dtype", "f16"}};
  TuneRequest req;
  req.family = gemm;
  req.problems = {p};
  req.space = gemm.default_space;
  req.compile_threads = 2;  // slow enough to be killed part-way
  req.run_dir = dir;
  req.resume = resume;
  Count count;
  Tuner tuner(*backend, devices.front());
  const RunSummary s = tuner.run(req, count);
  std::ofstream(report) << count.finished << ' ' << s.results.at(0).space_valid << '\n';
  return 0;
}

int run_child(const fs::path& dir, bool resume, const fs::path& cache, const fs::path& report, std::size_t kill_after) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int rc = tune(dir, resume, cache, report);
    std::fflush(nullptr);  // _exit skips stdio buffers
    _exit(rc);
  }
  int status = 0;
  bool reaped = false;
  if (kill_after > 0) {
    const auto trials = dir / "trials.csv";
    for (int i = 0; i < 12000 && !reaped; ++i) {
      if (waitpid(pid, &status, WNOHANG) == pid) reaped = true;  // ended (or skipped) on its own
      std::ifstream in(trials);
      std::size_t lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      if (!reaped && lines > kill_after) {
        kill(pid, SIGKILL);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!reaped) waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int main() {
  const fs::path root = fs::temp_directory_path() / ("ktune_resume_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path run = root / "run", cache = root / "cache", report = root / "report";
  const int first = run_child(run, false, cache, report, 8);
  if (first == 77) return 77;
  CHECK_MSG(first == -SIGKILL, "the first run ended with " + std::to_string(first) + " before it was killed");
  const std::size_t before = RunStore::read_trials(run).size();
  CHECK(before >= 8);
  CHECK(RunStore::read_metadata(run).state == "running");

  CHECK(run_child(run, true, cache, report, 0) == 0);
  std::size_t measured = 0, valid = 0;
  std::ifstream(report) >> measured >> valid;
  const auto trials = RunStore::read_trials(run);
  std::set<std::string> keys;
  for (const auto& t : trials) keys.insert(t.config.key());
  std::printf("killed after %zu trials; the resumed run measured %zu more; %zu trials of %zu configs\n", before,
              measured, trials.size(), valid);
  CHECK(keys.size() == trials.size());  // nothing measured twice
  CHECK(trials.size() == valid);        // nothing left out
  CHECK(measured == valid - before);
  CHECK(RunStore::read_metadata(run).state == "finished");
  CHECK(!RunStore::read_results(run).entries.empty());
  fs::remove_all(root);
  return ktune_test::finish("test_resume_gpu");
}
