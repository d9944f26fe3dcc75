// bench_strategies: on recorded landscapes, how many evaluations each strategy needs before it
// has measured a config within 2% of the landscape's best (median over 20 seeds), replayed
// through the replay backend. An evaluation is a proposed config the device would have had to
// build or run: every trial but those pruned before compiling.
//
//   bench_strategies [NAME=RUN_DIR_OR_KERNEL_TUNER_CACHE ...]
// Without arguments: the landscapes kept under bench/strategies/landscapes and the Kernel Tuner
// sample cache of tests/data. Prints landscape_size_<name>=N (configs evaluated by exhaustive
// search) and evals_to_2pct_<strategy>_<name>=N, or =none when a strategy never gets there; then
// the best strategy's count as a fraction of the landscape's size (goal <= 0.1) and random
// search's count over it (goal >= 3). BENCH_SEEDS=N takes the median over N seeds instead of
// 20; BENCH_VERBOSE=1 prints each seed's count to stderr.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ktune/error.h"
#include "ktune/kernel_tuner_import.h"
#include "ktune/replay_backend.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

static const int kSeeds = std::getenv("BENCH_SEEDS") ? std::atoi(std::getenv("BENCH_SEEDS")) : 20;
constexpr double kWithin = 1.02;

struct Landscape {
  std::string name;
  fs::path path;
};

// Evaluations up to and including the first ok trial within kWithin of `best_ns`.
std::optional<std::size_t> evals_to_target(const std::vector<Trial>& trials, double best_ns) {
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == TrialStatus::Ok && trials[i].stats.median_ns <= best_ns * kWithin) return i + 1;
  return std::nullopt;
}

// Records each evaluated trial in order; with a target, cancels the run once one reaches it
// (what comes after does not change the count, and a model-based strategy's full run is slow).
struct Order : TuneObserver {
  Tuner* tuner = nullptr;
  std::optional<double> stop_at_ns;
  std::vector<Trial> trials;
  void on_event(const TuneEvent& e) override {
    if (const auto* f = std::get_if<event::TrialFinished>(&e))
      if (f->trial.status != TrialStatus::Pruned) {
        trials.push_back(f->trial);
        if (stop_at_ns && evals_to_target({trials.back()}, *stop_at_ns)) tuner->cancel();
      }
  }
};

std::vector<Trial> replay(ReplayBackend& backend, const StrategySpec& strategy, std::optional<double> stop_at_ns = {}) {
  Tuner tuner(backend, backend.devices().front());
  Order order;
  order.tuner = &tuner;
  order.stop_at_ns = stop_at_ns;
  tuner.run(backend.request(strategy), order);
  return order.trials;
}

// The median, nullopt when it is a seed that never got there (which counts as worse than any
// that did).
std::optional<std::size_t> median_of(std::vector<std::optional<std::size_t>> evals) {
  std::sort(evals.begin(), evals.end(), [](const auto& a, const auto& b) { return a && (!b || *a < *b); });
  return evals[evals.size() / 2];
}

std::string text(std::optional<std::size_t> n) { return n ? std::to_string(*n) : "none"; }

void bench(const Landscape& l, const fs::path& scratch) {
  fs::path run = l.path;
  if (fs::is_regular_file(l.path)) {  // a Kernel Tuner cache: import it first
    run = scratch / l.name;
    write_imported_run(run, read_kernel_tuner_cache(l.path));
  }
  ReplayBackend backend(run);
  if (backend.metadata().problems.size() != 1)
    throw InputError(run.string() + ": a landscape is one problem; this run has " +
                     std::to_string(backend.metadata().problems.size()));

  const std::vector<Trial> all = replay(backend, {"exhaustive", 0, 0});
  double best = 0;
  for (const auto& t : all)
    if (t.status == TrialStatus::Ok && (best == 0 || t.stats.median_ns < best)) best = t.stats.median_ns;
  if (best == 0) throw InputError(run.string() + ": no config of the landscape ran");
  std::cout << "landscape_size_" << l.name << "=" << all.size() << "\n";
  std::cout << "best_ns_" << l.name << "=" << best << "\n";
  std::cout << "evals_to_2pct_exhaustive_" << l.name << "=" << text(evals_to_target(all, best)) << "\n";
  std::optional<std::size_t> random, best_guided;
  std::string best_kind;
  for (const char* kind : {"random", "local", "genetic", "bayes"}) {
    std::vector<std::optional<std::size_t>> evals;
    for (int seed = 0; seed < kSeeds; ++seed)
      evals.push_back(evals_to_target(replay(backend, {kind, 0, static_cast<std::uint64_t>(seed)}, best), best));
    if (std::getenv("BENCH_VERBOSE")) {
      std::cerr << kind << " " << l.name << ":";
      for (auto& e : evals) std::cerr << " " << text(e);
      std::cerr << "\n";
    }
    const auto median = median_of(evals);
    std::cout << "evals_to_2pct_" << kind << "_" << l.name << "=" << text(median) << "\n";
    if (std::string(kind) == "random")
      random = median;
    else if (median && (!best_guided || *median < *best_guided))
      best_guided = median, best_kind = kind;
  }
  // The goal: the best strategy within 2% in at most 10% of an exhaustive search's
  // evaluations (the landscape's size), and in at least 3x fewer than random search.
  if (best_guided) {
    std::cout << "best_strategy_" << l.name << "=" << best_kind << "\n";
    std::cout << "best_evals_over_exhaustive_" << l.name << "="
              << static_cast<double>(*best_guided) / static_cast<double>(all.size()) << "\n";
    if (random)
      std::cout << "random_over_best_evals_" << l.name << "="
                << static_cast<double>(*random) / static_cast<double>(*best_guided) << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Landscape> landscapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "usage: bench_strategies [NAME=RUN_DIR_OR_KERNEL_TUNER_CACHE ...]\n";
      return 2;
    }
    landscapes.push_back({arg.substr(0, eq), arg.substr(eq + 1)});
  }
  if (landscapes.empty()) {
    const fs::path src = KTUNE_SOURCE_DIR;
    for (const auto& e : fs::directory_iterator(src / "bench" / "strategies" / "landscapes"))
      if (e.is_directory()) landscapes.push_back({e.path().filename().string(), e.path()});
    std::sort(landscapes.begin(), landscapes.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    landscapes.push_back({"kt_matmul", src / "tests" / "data" / "kernel_tuner_matmul_cache.json"});
  }
  const fs::path scratch = fs::temp_directory_path() / ("ktune_bench_strategies_" + std::to_string(::getpid()));
  int rc = 0;
  try {
    for (const auto& l : landscapes) bench(l, scratch);
  } catch (const std::exception& e) {
    std::cerr << "bench_strategies: " << e.what() << "\n";
    rc = 2;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return rc;
}
