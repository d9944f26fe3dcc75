#pragma once
// Synthetic trials and run folders for the widget suites and the GUI benchmark: a gemm-like
// space whose latency depends on the config, every status represented, written through the
// core's RunStore so the files are exactly what a real run leaves behind.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/problem.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"

namespace fixture {

inline ktune::SearchSpace space() {
  return ktune::SearchSpace({{"BM", {16, 32, 64, 128}, ""},
                             {"BN", {16, 32, 64, 128}, ""},
                             {"BK", {8, 16, 32}, ""},
                             {"unroll", {1, 2, 4, 8}, ""},
                             {"threads", {1, 2, 4, 8, 16}, ""}},
                            {});
}

inline ktune::Problem problem(int m) {
  ktune::Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(m)}, {"N", "512"}, {"K", "512"}, {"dtype", "f32"}};
  return p;
}

inline std::vector<ktune::Problem> problems(int count) {
  std::vector<ktune::Problem> out;
  for (int i = 0; i < count; ++i) out.push_back(problem(16 << i));
  return out;
}

// `count` trials spread evenly over `shapes` problems (odometer order through the space within
// each), ~80 % ok; deterministic for a seed.
inline std::vector<ktune::Trial> trials(std::size_t count, const std::vector<ktune::Problem>& shapes,
                                        unsigned seed = 1) {
  using namespace ktune;
  const SearchSpace s = space();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Trial> out;
  out.reserve(count);
  const std::size_t perShape = (count + shapes.size() - 1) / shapes.size();
  for (std::size_t i = 0; i < count; ++i) {
    const Problem& p = shapes[std::min(shapes.size() - 1, i / perShape)];
    std::size_t index = i % perShape;
    std::vector<std::pair<std::string, ParamValue>> values;
    for (auto it = s.parameters().rbegin(); it != s.parameters().rend(); ++it) {
      values.insert(values.begin(), {it->name, it->values[index % it->values.size()]});
      index /= it->values.size();
    }
    Trial t;
    t.id = static_cast<std::int64_t>(i);
    t.problem_key = p.key();
    t.config = Config(values);
    const double m = static_cast<double>(p.num("M"));
    const double flops = 2 * m * 512 * 512;
    // A smooth landscape with a sweet spot at BM=64, BN=32, unroll=4.
    const double shape_penalty = 1 + 0.3 * std::abs(std::log2(t.config.get("BM") / 64.0)) +
                                 0.2 * std::abs(std::log2(t.config.get("BN") / 32.0)) +
                                 0.1 * std::abs(std::log2(t.config.get("unroll") / 4.0));
    const double median = flops / 50.0 * shape_penalty / std::sqrt(static_cast<double>(t.config.get("threads")));
    const double r = unit(rng);
    if (r < 0.80 || r >= 0.95) {
      t.status = r < 0.80 ? TrialStatus::Ok : TrialStatus::SlowAbort;
      const int n = t.status == TrialStatus::Ok ? 8 : 3;
      for (int k = 0; k < n; ++k) t.samples_ns.push_back(median * (1 + 0.02 * unit(rng)));
      t.stats = summarize(t.samples_ns);
      t.tflops = flops / t.stats.median_ns / 1e3;
      t.gbps = 4.0 * (m * 512 + 512 * 512 + m * 512) / t.stats.median_ns;
      t.compile_time_s = 0.01;
      if (t.status == TrialStatus::SlowAbort) t.error = "could not beat the best so far";
    } else if (r < 0.85) {
      t.status = TrialStatus::Pruned;
      t.error = "BM*BN <= 8192";
    } else if (r < 0.90) {
      t.status = TrialStatus::LaunchError;
      t.error = "needs 96 KiB of shared memory, the device has 48 KiB";
    } else {
      t.status = TrialStatus::WrongResult;
      t.error = "max abs error 0.5, mismatched 3.1 %";
    }
    t.started_at_s = static_cast<double>(i) * 0.01;
    out.push_back(std::move(t));
  }
  return out;
}

inline ktune::DeviceInfo device() {
  ktune::DeviceInfo d;
  d.backend = "cpu";
  d.name = "Test CPU";
  d.properties = {{"cores", 8}, {"peak_gflops_f32", 500}, {"mem_bandwidth_gbs", 50}};
  return d;
}

// A run folder with its metadata and every trial of trials(count, problems(shapes), seed) in
// trials.csv, not finished yet.
struct StartedRun {
  ktune::RunMetadata meta;
  ktune::RunStore store;
  std::vector<ktune::Trial> trials;
};
inline StartedRun start_run(const std::filesystem::path& dir, std::size_t count, int shapes, unsigned seed = 1) {
  using namespace ktune;
  RunMetadata meta;
  meta.run_name = dir.filename().string();
  meta.family = "gemm";
  meta.backend = "cpu";
  meta.device = device();
  meta.problems = problems(shapes);
  meta.space = space();
  meta.started_at = now_iso8601();
  RunStore store = RunStore::create(dir, meta);
  std::vector<Trial> all = trials(count, meta.problems, seed);
  for (const Trial& t : all) store.append(t);
  return StartedRun{std::move(meta), std::move(store), std::move(all)};
}

// The ok trials of `problem`, fastest search median first.
inline std::vector<ktune::Trial> ranked(const std::vector<ktune::Trial>& all, const ktune::Problem& problem) {
  std::vector<ktune::Trial> ok;
  for (const ktune::Trial& t : all)
    if (t.problem_key == problem.key() && t.status == ktune::TrialStatus::Ok) ok.push_back(t);
  std::stable_sort(ok.begin(), ok.end(),
                   [](const ktune::Trial& a, const ktune::Trial& b) { return a.stats.median_ns < b.stats.median_ns; });
  return ok;
}

// Each problem's winner as a search with nothing re-measured decides it: its best ok trial.
inline std::vector<ktune::ProblemResult> search_results(const StartedRun& run) {
  using namespace ktune;
  std::vector<ProblemResult> results;
  for (const Problem& p : run.meta.problems) {
    ProblemResult r;
    r.problem = p;
    const std::vector<Trial> ok = ranked(run.trials, p);
    if (!ok.empty()) {
      r.best = ok.front();
      r.choice = search_choice(ok.front(), run.meta.measure.noise_target);
    }
    r.space_total = run.meta.space.total_size();
    r.space_valid = r.space_total;
    results.push_back(std::move(r));
  }
  return results;
}

// Writes a complete run folder (metadata, trials.csv, results.json with the best ok trial per
// problem) and returns its trials.
inline std::vector<ktune::Trial> write_run(const std::filesystem::path& dir, std::size_t count, int shapes,
                                           bool finished = true, unsigned seed = 1) {
  StartedRun run = start_run(dir, count, shapes, seed);
  if (finished) run.store.finish(search_results(run), "finished");
  return run.trials;
}

// `t`'s samples scaled by `factor`, as a re-measure that found it that much slower.
inline ktune::Trial retimed(ktune::Trial t, double factor) {
  for (double& s : t.samples_ns) s *= factor;
  t.stats = ktune::summarize(t.samples_ns);
  t.tflops /= factor;
  t.gbps /= factor;
  return t;
}

// A finished run whose winners are not the search's best, as after the re-measure: the search's
// fastest trial of each problem was lucky (3x slower re-measured), and the fastest trial with
// another BN wins at 1.05x its search median. Problem 0's winner re-measured 1.4x its search:
// it disagrees, and is flagged. Returns the results written, for the numbers to expect.
inline std::vector<ktune::ProblemResult> write_remeasured_run(const std::filesystem::path& dir, std::size_t count,
                                                              int shapes) {
  using namespace ktune;
  StartedRun run = start_run(dir, count, shapes);
  std::vector<ProblemResult> results = search_results(run);
  for (std::size_t i = 0; i < results.size(); ++i) {
    ProblemResult& r = results[i];
    const std::vector<Trial> ok = ranked(run.trials, r.problem);
    const Trial& lucky = ok.front();
    const auto other = std::find_if(ok.begin(), ok.end(),
                                    [&](const Trial& t) { return t.config.get("BN") != lucky.config.get("BN"); });
    const Trial& won = *other;
    const Trial rejected = retimed(lucky, 3.0), winner = retimed(won, i == 0 ? 1.4 : 1.05);
    r.remeasured = {{lucky.config, lucky.stats.median_ns, rejected.stats, rejected.samples_ns},
                    {won.config, won.stats.median_ns, winner.stats, winner.samples_ns}};
    r.choice.by = ChosenBy::Remeasure;
    r.choice.trial_id = won.id;
    r.choice.search = won.stats;
    r.choice.flags = judge_winner(winner.samples_ns, ChosenBy::Remeasure, won.stats, run.meta.measure.noise_target);
    r.best = winner;
  }
  run.store.finish(results, "finished");
  return results;
}

// Measurement settings that make a run of a few configs take seconds.
inline void quickMeasure(ktune::MeasureSettings& m, double maxMsPerConfig) {
  m.min_samples = 3;
  m.max_samples = 5;
  m.warmup_ms = 1;
  m.min_sample_ms = 0.2;
  m.max_ms_per_config = maxMsPerConfig;
}

// A real run into `dir` on `backend`'s first device: `budget` random configs (`seed`) of
// `family`'s own space on each problem of `shape`, a few samples each (quickMeasure), nothing
// re-measured. `adjust` changes the request before it runs (a space of its own, no slow abort).
inline ktune::RunSummary quick_tune(ktune::Backend& backend, const std::string& family, const std::string& shape,
                                    const std::filesystem::path& dir, std::uint64_t budget, unsigned seed,
                                    double maxMsPerConfig = 50,
                                    const std::function<void(ktune::TuneRequest&)>& adjust = {}) {
  using namespace ktune;
  TuneRequest req;
  req.family = backend.family(family);
  req.problems = expand_shape(req.family, shape);
  req.space = req.family.default_space;
  req.strategy = {"random", budget, seed};
  quickMeasure(req.measure, maxMsPerConfig);
  req.measure.remeasure_top = 0;
  req.run_dir = dir;
  if (adjust) adjust(req);
  struct Quiet : TuneObserver {
    void on_event(const TuneEvent&) override {}
  } quiet;
  return Tuner(backend, find_device(backend, 0)).run(req, quiet);
}

// quick_tune's adjustment for runs whose every config that runs must get a time, however slow.
inline void no_slow_abort(ktune::TuneRequest& req) { req.measure.slow_abort = false; }

}  // namespace fixture
