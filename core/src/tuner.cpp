#include "ktune/tuner.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ktune/device_pool.h"
#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/run_options.h"
#include "ktune/run_store.h"
#include "ktune/version.h"
#include "ktune/workload_rules.h"
#include "winner_round.h"

namespace ktune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Seconds each problem's search took in the sessions recorded in `trials` (for a time budget on
// resume). trials.csv keeps start times only: a trial lasted until the next one started in the
// same session (a later start); the last one of a session, whose end is unknown, counts as long
// as the problem's other trials took on average (its compile time and samples when it has none).
std::map<std::string, double> recorded_search_time(std::vector<Trial> trials) {
  std::sort(trials.begin(), trials.end(), [](const Trial& a, const Trial& b) { return a.id < b.id; });
  struct Spent {
    double known_s = 0;
    std::size_t known = 0;
    std::vector<const Trial*> open;  // trials whose end is unknown
  };
  std::map<std::string, Spent> by_problem;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    Spent& s = by_problem[trials[i].problem_key];
    if (i + 1 < trials.size() && trials[i + 1].started_at_s >= trials[i].started_at_s) {
      s.known_s += trials[i + 1].started_at_s - trials[i].started_at_s;
      ++s.known;
    } else {
      s.open.push_back(&trials[i]);
    }
  }
  std::map<std::string, double> out;
  for (const auto& [key, s] : by_problem) {
    double total = s.known_s;
    for (const Trial* t : s.open) {
      double own = t->compile_time_s;
      for (double ns : t->samples_ns) own += ns * 1e-9;
      total += s.known ? s.known_s / static_cast<double>(s.known) : own;
    }
    out[key] = total;
  }
  return out;
}

struct PlannedProblem {
  Problem problem;
  std::vector<Config> valid;
  ProblemPruning pruning;
};

// Configs proposed per strategy call. Fixed, not tied to the thread count: a model-guided
// strategy's choices depend on how its proposals are batched, and a resumed run must make the
// same choices as the session before it, on any machine.
constexpr std::size_t kProposalBatch = 32;

// A resume continues the run as it was started: the request must carry the run's settings.
void check_resume(const TuneRequest& req, const std::vector<Problem>& problems) {
  const std::filesystem::path file = req.run_dir / "run_metadata.json";
  if (!std::filesystem::exists(file))
    throw InputError(req.run_dir.string() +
                     " holds no run_metadata.json: the run was stopped before it started (or "
                     "this is not a run folder); start it again without --resume");
  const RunMetadata run = RunStore::read_metadata(req.run_dir);
  if (run.family != req.family.name)
    throw InputError("cannot resume " + req.run_dir.string() + ": it tuned " + run.family + ", not " + req.family.name);
  check_workload_rules(run, req.run_dir.string(), req.family);
  RunSettings asked = req.settings();
  asked.problems = problems;
  const auto diffs = differences(run, asked);
  if (!diffs.empty())
    throw InputError("cannot resume " + req.run_dir.string() + ": " + diffs.front().field +
                     " differs from the run's: run has " + diffs.front().run_value + ", asked " +
                     diffs.front().asked_value + "; resume with the run's settings or start a new run");
}

}  // namespace

Tuner::Tuner(Backend& backend, DeviceInfo device) : Tuner(std::vector<Lane>{{&backend, std::move(device)}}) {}

Tuner::Tuner(std::vector<Lane> lanes) : lanes_(std::move(lanes)) {
  if (lanes_.empty()) throw InputError("a run measures on at least one device");
  for (const auto& l : lanes_)
    if (l.device.slug() != lanes_.front().device.slug())
      throw InputError("devices " + lanes_.front().device.name + " and " + l.device.name +
                       " are different models: their times do not compare, tune them in separate runs");
}

std::optional<double> ProblemResult::speedup() const {
  if (!baseline || !best || baseline->median_ns <= 0) return std::nullopt;
  const double ours = best_paired ? best_paired->median_ns : best->stats.median_ns;
  if (ours <= 0) return std::nullopt;
  return baseline->median_ns / ours;
}

RunSummary Tuner::run(const TuneRequest& req, TuneObserver& observer) {
  cancelled_ = false;
  const auto start = Clock::now();
  if (req.problems.empty()) throw InputError("nothing to tune: give at least one --shape");
  if (req.problems.size() > kMaxProblems)
    throw InputError(std::to_string(req.problems.size()) + " problems to tune, more than " +
                     std::to_string(kMaxProblems) +
                     " in one run; split the shapes over several runs or tune fewer values per field");
  validate(req.settings());  // whatever front end asked: run_metadata.json must read back

  const std::vector<Problem> problems = unique_problems(req.problems);
  if (problems.size() < req.problems.size())
    observer.on_event(event::Log{std::to_string(req.problems.size() - problems.size()) +
                                 " repeated shape(s) merged: each problem is tuned once"});

  // Everything that can be wrong with the request is found before the first measurement.
  std::vector<PlannedProblem> plan;
  std::uint64_t planned_total = 0;
  for (const auto& problem : problems) {
    PlannedProblem pp{problem, {}, {}};
    pp.pruning.problem = problem.key();
    pp.pruning.variables = device().variables();
    for (const auto& [k, v] : req.family.variables(problem)) pp.pruning.variables[k] = v;
    pp.valid = req.space.enumerate(pp.pruning.variables, nullptr, &pp.pruning.report);
    require_valid_configs(pp.pruning.report, req.family.name + " " + problem.key());
    auto probe = make_strategy(req.strategy, req.shard, problem.key());
    probe->reset(pp.valid);
    pp.pruning.planned = probe->planned();
    planned_total += pp.pruning.planned;
    plan.push_back(std::move(pp));
  }

  std::optional<RunStore> store;
  std::map<std::string, std::map<std::string, Trial>> done;  // problem key -> config key -> trial
  std::map<std::string, double> spent_before;                // problem key -> seconds of search in earlier sessions
  std::int64_t next_id = 0;
  if (!req.run_dir.empty()) {
    if (req.resume) {
      check_resume(req, problems);  // before open_for_resume, which marks the run running again
      store.emplace(RunStore::open_for_resume(req.run_dir));
      std::vector<Trial> recorded = RunStore::read_trials(req.run_dir);
      spent_before = recorded_search_time(recorded);
      for (auto& t : recorded) {
        next_id = std::max(next_id, t.id + 1);
        done[t.problem_key][t.config.key()] = std::move(t);
      }
      std::size_t n = 0;
      for (const auto& [k, m] : done) n += m.size();
      observer.on_event(event::Log{"resuming " + req.run_dir.string() + ": " + std::to_string(n) +
                                   " trials already recorded are not measured again"});
    } else {
      RunMetadata md;
      md.run_name = req.run_dir.filename().string();
      md.family = req.family.name;
      md.family_description = describe_family(req.family, req.space);
      md.backend = backend().name();
      md.device = device();
      md.arguments = req.arguments;
      md.working_directory = current_working_directory();
      md.settings() = req.settings();
      md.problems = problems;
      for (const auto& pp : plan) md.pruning.push_back(pp.pruning);
      md.ktune_version = version();
      md.versions = backend().versions();
      md.workload_rules = backend().workload_rules();
      md.started_at = now_iso8601();
      store.emplace(RunStore::create(req.run_dir, md));
    }
  }

  observer.on_event(event::RunStarted{problems.size(), planned_total, device()});
  RunSummary summary;
  summary.run_dir = req.run_dir;
  std::uint64_t measured = 0;
  const unsigned threads = req.compile_threads > 0 ? static_cast<unsigned>(req.compile_threads)
                                                   : std::max(1u, std::thread::hardware_concurrency());
  DevicePool devices(lanes_, threads);

  auto record = [&](Trial& t) {
    summary.status_counts[to_string(t.status)]++;
    if (store) store->append(t);
  };

  // A RunError (device lost, disk full) or a failing backend ends the run: what was measured
  // is kept, the run is marked failed, and --resume continues it in a fresh process.
  try {
    for (std::size_t pi = 0; pi < plan.size() && !cancelled_; ++pi) {
      auto& pp = plan[pi];
      const Problem& problem = pp.problem;
      const std::string pkey = problem.key();
      auto& already = done[pkey];
      auto strategy = make_strategy(req.strategy, req.shard, pkey);
      strategy->reset(pp.valid);
      observer.on_event(
          event::ProblemStarted{pi, problem, pp.pruning.report, strategy->planned(), pp.pruning.variables});

      ProblemResult result;
      result.problem = problem;
      result.space_total = pp.pruning.report.total;
      result.space_valid = pp.pruning.report.valid;
      auto consider_best = [&](const Trial& t) {
        if (t.status == TrialStatus::Ok && (!result.best || t.stats.median_ns < result.best->stats.median_ns)) {
          result.best = t;
          return true;
        }
        return false;
      };
      for (const auto& [ck, t] : already) consider_best(t);

      // Pruned configs are counted, not recorded one by one (pruned_trials() lists them).
      summary.status_counts[to_string(TrialStatus::Pruned)] += pp.pruning.report.total - pp.pruning.report.valid;

      const double flops = req.family.flops(problem);
      const double bytes = req.family.bytes(problem);
      devices.open(req.family, problem, req.seed);

      // The time budget ends this problem's search (not the run) between two trials.
      const auto problem_start = Clock::now();
      const double budget_s = req.strategy.time_budget_s;
      bool out_of_time = false;
      auto time_is_up = [&] {
        if (budget_s <= 0 || out_of_time) return out_of_time;
        if (spent_before[pkey] + seconds_since(problem_start) < budget_s) return false;
        out_of_time = true;
        observer.on_event(event::Log{"time budget of " + std::to_string(budget_s) + " s spent on " + pkey +
                                     ": its search stops here"});
        return true;
      };
      std::vector<Trial> ran;  // ok trials of this problem, recorded and new, for the re-measure
      for (const auto& [ck, t] : already)
        if (t.status == TrialStatus::Ok) ran.push_back(t);

      while (!cancelled_ && !time_is_up()) {
        const auto proposed = strategy->next(kProposalBatch);
        if (proposed.empty()) break;
        // Trials recorded before a resume are replayed into the strategy, not measured again: it
        // hears every trial of the batch in the order it proposed them, as without the
        // interruption, and so proposes what it would have proposed; its budget counts them.
        std::vector<Config> batch;
        for (const auto& c : proposed)
          if (!already.count(c.key())) batch.push_back(c);
        measured += proposed.size() - batch.size();
        std::map<std::string, Trial> finished;  // config key -> trial measured in this batch
        std::vector<Trial> started(batch.size());
        std::atomic<double> best_ns{result.best ? result.best->stats.median_ns : 0.0};
        DevicePool::Hooks hooks;
        hooks.best = [&]() -> std::optional<double> {
          const double b = best_ns.load();
          return b > 0 ? std::optional<double>(b) : std::nullopt;
        };
        hooks.start = [&](std::size_t i) {
          while (paused_ && !cancelled_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          if (cancelled_ || time_is_up()) return false;
          Trial& t = started[i];
          t.id = next_id++;
          t.problem_key = pkey;
          t.config = batch[i];
          t.started_at_s = seconds_since(start);
          observer.on_event(event::TrialStarted{t.id, pkey, t.config});
          return true;
        };
        hooks.finish = [&](std::size_t i, Trial m) {
          m.id = started[i].id;
          m.problem_key = pkey;
          m.started_at_s = started[i].started_at_s;
          set_rates(m, flops, bytes);
          const bool new_best = consider_best(m);
          if (new_best) best_ns = m.stats.median_ns;
          if (m.status == TrialStatus::Ok) ran.push_back(m);
          record(m);
          ++measured;
          observer.on_event(event::TrialFinished{m, new_best});
          const double elapsed = seconds_since(start);
          const double rate = elapsed > 0 ? static_cast<double>(measured) / elapsed : 0;
          const double eta =
              rate > 0 ? static_cast<double>(planned_total - std::min(planned_total, measured)) / rate : 0;
          observer.on_event(event::Progress{measured, planned_total, elapsed, eta, rate});
          finished.emplace(m.config.key(), std::move(m));
        };
        if (!batch.empty()) devices.measure(batch, req.tolerance, req.measure, hooks);
        if (cancelled_ || out_of_time) break;  // the search ends: what the batch did not measure is not reported
        for (const auto& c : proposed) {
          const auto it = already.find(c.key());
          strategy->report(it != already.end() ? it->second : finished.at(c.key()));
        }
      }
      if (result.best) result.choice = search_choice(*result.best, req.measure.noise_target);
      if (!cancelled_)
        detail::decide_winner(devices.session(0), req.measure, std::move(ran), flops, bytes, result, observer);
      observer.on_event(event::ProblemFinished{result});
      summary.results.push_back(std::move(result));
    }
  } catch (const std::exception& e) {
    // The error that ended the run is the one to report. Marking the run failed can fail too
    // (a full disk refuses results.json as it refused trials.csv): say so, after it.
    std::string message = e.what();
    try {
      if (store) store->finish(summary.results, "failed");
    } catch (const std::exception& also) {
      message += "; the run could not be marked failed either: " + std::string(also.what());
    }
    observer.on_event(event::RunFailed{message});
    if (message == e.what()) throw;
    throw RunError(message);
  }

  // results.json and every listing show shapes in key order, whatever order they were given in.
  std::stable_sort(summary.results.begin(), summary.results.end(), [](const ProblemResult& a, const ProblemResult& b) {
    return compare_keys(a.problem.key(), b.problem.key()) < 0;
  });
  summary.cancelled = cancelled_;
  summary.elapsed_s = seconds_since(start);
  if (store) store->finish(summary.results, summary.cancelled ? "cancelled" : "finished");
  observer.on_event(event::RunFinished{summary});
  return summary;
}

}  // namespace ktune
