#include "ktune/run_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

struct Shard {
  fs::path dir;
  RunMetadata metadata;
  std::vector<Trial> trials;
  std::optional<RunResults> results;     // for the baselines; none when the shard has no results.json
  std::optional<FileLock> lock;          // held while merging: a shard still running is refused
  std::optional<std::size_t> torn_line;  // of trials.csv's torn last row, left out
};

// A torn last row is the trial a killed run was writing: an unfinished shard's is left out, as
// resume cuts it off and measures it again (a resume of the merged run does). A shard marked
// finished wrote every row whole, so its torn row is a file cut short since (an interrupted
// copy from the cluster, a full disk): merging it would lose a trial and call the run finished.
void check_torn_row(const Shard& s, bool allow_unfinished) {
  if (!s.torn_line || s.metadata.state != "finished" || allow_unfinished) return;
  throw InputError((s.dir / "trials.csv").string() + ":" + std::to_string(*s.torn_line) + ": the last row of shard " +
                   s.metadata.shard.to_string() +
                   " is torn (the file ends inside it), yet the shard is marked finished: the file was cut short "
                   "after the run (an interrupted copy?). Copy the shard's folder again, or merge anyway with "
                   "--allow-unfinished (that trial is left out, the merged run is partial, and resuming it measures "
                   "the trial again)");
}

Shard read_shard(const fs::path& dir, bool allow_unfinished) {
  if (!fs::exists(dir)) throw InputError(dir.string() + " does not exist: give the run folders of the shards to merge");
  if (!fs::is_directory(dir)) throw InputError(dir.string() + " is not a folder: give the run folders of the shards");
  Shard s;
  s.dir = dir;
  s.metadata = RunStore::read_metadata(dir);
  s.lock = FileLock::try_acquire(dir / ".ktune.lock");
  if (!s.lock)
    throw InputError(dir.string() +
                     " is in use by another ktune process (the shard is still running?); merge it when it ends");
  if (!s.metadata.shard.sharded())
    throw InputError(
        dir.string() +
        " is not a shard (it was tuned without --shard I/N); merge combines the runs of `ktune tune --shard`");
  if (s.metadata.state != "finished" && !allow_unfinished)
    throw InputError(dir.string() + " (shard " + s.metadata.shard.to_string() + ") is " + s.metadata.state +
                     ": its trials are partial; finish it with `ktune tune --resume --run-name " +
                     dir.filename().string() + "` or merge anyway with --allow-unfinished");
  s.trials = RunStore::read_trials(dir, &s.torn_line);
  check_torn_row(s, allow_unfinished);
  if (fs::exists(dir / "results.json")) s.results = RunStore::read_results(dir);
  return s;
}

// What must be equal for shards to be one run: the kernel, where it ran, and every setting but the shard.
void check_same_run(const Shard& first, const Shard& other) {
  const RunMetadata &a = first.metadata, &b = other.metadata;
  auto refuse = [&](const std::string& field, const std::string& va, const std::string& vb) {
    throw InputError("cannot merge " + other.dir.string() + " with " + first.dir.string() + ": " + field +
                     " differs (" + vb + " there, " + va + " in " + first.dir.string() +
                     "); shards of one run share everything but --shard");
  };
  if (a.family != b.family) refuse("the kernel family", a.family, b.family);
  if (a.backend != b.backend) refuse("the backend", a.backend, b.backend);
  if (a.device.slug() != b.device.slug()) refuse("the device", a.device.name, b.device.name);
  if (a.shard.count != b.shard.count) refuse("the shard count", a.shard.to_string(), b.shard.to_string());
  // As the workload seed (a setting, below): trials measured on other inputs are not one run's.
  if (a.workload_rules != b.workload_rules)
    refuse("the workload rules its inputs were made under (workload_rules)", std::to_string(a.workload_rules),
           std::to_string(b.workload_rules));
  RunSettings sb = b.settings();
  sb.shard = a.shard;
  if (const auto diffs = differences(a.settings(), sb); !diffs.empty())
    refuse(diffs.front().field, diffs.front().run_value, diffs.front().asked_value);
  // Pruning depends on the device's properties: shards pruned differently sliced different spaces.
  // (Measured properties such as peak_gflops_f32 vary a little from run to run; the counts do not.)
  for (const auto& pa : a.pruning)
    for (const auto& pb : b.pruning)
      if (pa.problem == pb.problem &&
          (pa.report.valid != pb.report.valid || pa.report.pruned_by != pb.report.pruned_by))
        refuse("the pruning of " + pa.problem + " (device properties)",
               std::to_string(pa.report.valid) + " valid configs", std::to_string(pb.report.valid) + " valid configs");
}

// The winner of the shard whose winner has the fastest deciding number (each shard re-measured
// its own best few; across shards those numbers are the fairest there are), with that shard's
// choice and baseline pairing; the fastest search trial for a problem no shard finished.
// `trials` are the merged run's, in their new id order.
ProblemResult result_for(const Problem& problem, const std::vector<const Trial*>& trials,
                         const std::vector<Shard>& shards, const RunMetadata& md) {
  ProblemResult r;
  r.problem = problem;
  for (const auto& p : md.pruning)
    if (p.problem == problem.key()) r.space_total = p.report.total, r.space_valid = p.report.valid;
  const ResultEntry* chosen = nullptr;
  for (const auto& s : shards)
    if (s.results)
      for (const auto& e : s.results->entries)
        if (e.problem.key() == problem.key() && (!chosen || e.stats.median_ns < chosen->stats.median_ns)) chosen = &e;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const Trial* t = trials[i];
    if (t->problem_key != problem.key() || t->status != TrialStatus::Ok) continue;
    if (chosen ? t->config == chosen->config : (!r.best || t->stats.median_ns < r.best->stats.median_ns)) {
      r.best = *t;
      r.best->id = static_cast<std::int64_t>(i);
    }
  }
  if (!r.best) return r;
  if (!chosen) {
    r.choice = search_choice(*r.best, md.measure.noise_target);
    return r;
  }
  r.choice = chosen->choice;
  r.choice.trial_id = r.best->id;
  if (r.best->stats.median_ns > 0) r.best->gbps *= r.best->stats.median_ns / chosen->stats.median_ns;
  r.best->stats = chosen->stats;
  r.best->samples_ns = chosen->samples_ns;
  r.best->tflops = chosen->tflops;
  replace_conditions(r.best->metrics, chosen->conditions);  // the shard's deciding number's, not its search's
  r.baseline_name = chosen->baseline_name;
  r.baseline = chosen->baseline;
  r.baseline_conditions = chosen->baseline_conditions;
  r.best_paired = chosen->best_paired;
  r.remeasured = chosen->remeasured;
  return r;
}

}  // namespace

MergeReport merge_runs(const std::vector<fs::path>& dirs, const fs::path& out_dir, const MergeOptions& options) {
  if (dirs.empty()) throw InputError("nothing to merge: give the run folders of the shards");
  std::map<fs::path, fs::path> seen;  // canonical -> as given
  for (const auto& d : dirs) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(d, ec);
    const auto [it, fresh] = seen.emplace(ec ? d : canon, d);
    if (!fresh)
      throw InputError(d.string() + " is given twice (also as " + it->second.string() +
                       "): merging a run with itself would count its trials twice");
  }
  if (fs::exists(out_dir / "run_metadata.json"))
    throw InputError(out_dir.string() + " already holds a run; choose another --run-name or --output-dir");

  std::vector<Shard> shards;
  for (const auto& d : dirs) shards.push_back(read_shard(d, options.allow_unfinished));
  for (std::size_t i = 1; i < shards.size(); ++i) check_same_run(shards.front(), shards[i]);
  std::sort(shards.begin(), shards.end(),
            [](const Shard& a, const Shard& b) { return a.metadata.shard.index < b.metadata.shard.index; });
  for (std::size_t i = 1; i < shards.size(); ++i)
    if (shards[i - 1].metadata.shard.index == shards[i].metadata.shard.index)
      throw InputError(shards[i - 1].dir.string() + " and " + shards[i].dir.string() + " are both shard " +
                       shards[i].metadata.shard.to_string() + ": give each shard once");

  const std::uint32_t count = shards.front().metadata.shard.count;
  std::string missing;
  for (std::uint32_t i = 0, k = 0; i < count; ++i) {
    if (k < shards.size() && shards[k].metadata.shard.index == i) {
      ++k;
      continue;
    }
    missing += (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
  }
  if (!missing.empty() && !options.allow_unfinished)
    throw InputError("shard(s) " + missing +
                     " missing: give the run folder of every shard, or merge a part with --allow-unfinished");

  // Every (problem, config) once, and in the shard it belongs to.
  std::map<std::pair<std::string, std::string>, const Shard*> owner;
  std::vector<const Trial*> trials;
  for (const auto& s : shards)
    for (const auto& t : s.trials) {
      if (t.status == TrialStatus::Pruned) continue;  // runs that listed pruned configs: re-enumerated from the space
      const auto [it, fresh] = owner.emplace(std::make_pair(t.problem_key, t.config.key()), &s);
      if (!fresh)
        throw InputError("the trial of " + t.problem_key + " " + t.config.key() + " is in " + it->second->dir.string() +
                         " and in " + s.dir.string() +
                         ": the shards overlap (the same shard copied twice?); merge each once");
      if (!s.metadata.shard.contains(t.problem_key, t.config))
        throw InputError(s.dir.string() + " holds a trial of " + t.problem_key + " " + t.config.key() +
                         " that is not of shard " + s.metadata.shard.to_string() +
                         ": the folder was not written by `ktune tune --shard`");
      trials.push_back(&t);
    }

  MergeReport report;
  bool partial = !missing.empty();
  RunMetadata md = shards.front().metadata;
  md.run_name = out_dir.filename().string();
  md.shard = {};
  md.arguments = options.arguments;
  // The merge's own folder, which its shard paths start from; each shard keeps its own in merged_from.
  md.working_directory = current_working_directory();
  md.ktune_version = version();
  md.finished_at.clear();
  md.state = "running";
  md.merged_from.clear();
  // What the unsharded run plans, also when a shard is missing: a resume of the merged run measures the rest.
  for (auto& p : md.pruning) {
    auto strategy = make_strategy(md.strategy);
    strategy->reset(md.space.enumerate(p.variables));
    p.planned = strategy->planned();
  }
  for (const auto& s : shards) {
    partial = partial || s.metadata.state != "finished" || s.torn_line;
    if (s.torn_line) report.torn_rows.push_back((s.dir / "trials.csv").string() + ":" + std::to_string(*s.torn_line));
    md.started_at = std::min(md.started_at, s.metadata.started_at);
    md.merged_from.push_back(s.metadata.to_json());
  }

  RunStore store = RunStore::create(out_dir, md);
  std::int64_t id = 0;
  for (const Trial* t : trials) {
    Trial copy = *t;
    copy.id = id++;
    store.append(copy);
  }
  std::vector<ProblemResult> results;
  for (const auto& p : md.problems) {
    results.push_back(result_for(p, trials, shards, md));
    report.problems_with_result += results.back().best.has_value();
  }
  std::stable_sort(results.begin(), results.end(), [](const ProblemResult& a, const ProblemResult& b) {
    return compare_keys(a.problem.key(), b.problem.key()) < 0;
  });
  report.state = partial ? "cancelled" : "finished";
  store.finish(results, report.state);
  report.run_dir = out_dir;
  report.shards = shards.size();
  report.trials = trials.size();
  return report;
}

}  // namespace ktune
