#include "ktune/run_store.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/registry.h"
#include "ktune/tuner.h"
#include "run_format.h"

namespace ktune {

namespace fs = std::filesystem;
using namespace detail;
using nlohmann::json;

namespace {

const std::set<std::string> kRunStates = {"running", "finished", "cancelled", "failed"};

}  // namespace

// ---------------------------------------------------------------------------------------------
// RunMetadata

namespace {

json pruning_json(const ProblemPruning& p) {
  json by = json::array();
  for (const auto& [expr, n] : p.report.pruned_by) by.push_back({{"constraint", expr}, {"configs", n}});
  return {{"problem", p.problem},    {"variables", p.variables}, {"total", p.report.total},
          {"valid", p.report.valid}, {"planned", p.planned},     {"pruned_by", by}};
}

ProblemPruning pruning_from(const JsonPath& p) {
  ProblemPruning out;
  out.problem = p["problem"].string();
  p["variables"].for_each_member([&](const std::string& name, const JsonPath& v) { out.variables[name] = v.number(); });
  out.report.total = p["total"].unsigned_integer();
  out.report.valid = p["valid"].unsigned_integer();
  out.planned = p["planned"].unsigned_integer();
  const JsonPath by = p["pruned_by"];
  for (std::size_t i = 0; i < by.size(); ++i)
    out.report.pruned_by.emplace_back(by[i]["constraint"].string(), by[i]["configs"].unsigned_integer());
  return out;
}

}  // namespace

json RunMetadata::to_json() const {
  json versions_json = json::array();
  for (const auto& [name, v] : versions) versions_json.push_back({{"name", name}, {"version", v}});
  json pruning_list = json::array();
  for (const auto& p : pruning) pruning_list.push_back(pruning_json(p));
  json j = {{"ktune_run", kRunFormat},    {"run", run_name},
            {"family", family},           {"backend", backend},
            {"device", device.to_json()}, {"arguments", arguments},
            {"pruning", pruning_list},    {"ktune_version", ktune_version},
            {"versions", versions_json},  {"started_at", started_at},
            {"finished_at", finished_at}, {"state", state}};
  j.update(RunSettings::to_json());
  j["workload_rules"] = workload_rules;
  if (!working_directory.empty()) j["working_directory"] = working_directory;
  if (!merged_from.empty()) j["merged_from"] = merged_from;
  if (!family_description.is_null()) j["family_description"] = family_description;
  return j;
}

RunMetadata RunMetadata::from_json(const json& j) {
  const JsonPath root(j);
  const std::int64_t format = root["ktune_run"].integer();
  if (format != kRunFormat)
    root["ktune_run"].fail("run format " + std::to_string(format) + " is not supported by this ktune (it reads " +
                           std::to_string(kRunFormat) + ")");
  RunMetadata m;
  m.settings() = RunSettings::from_json(j);
  m.run_name = root["run"].string();
  m.family = root["family"].string();
  m.backend = root["backend"].string();
  m.device = root["device"].parse(DeviceInfo::from_json);
  for (std::size_t i = 0; i < root["arguments"].size(); ++i) m.arguments.push_back(root["arguments"][i].string());
  // Runs that predate the record leave it out: their relative paths mean nothing known.
  if (const auto dir = root.find("working_directory")) {
    m.working_directory = dir->string();
    if (!fs::path(m.working_directory).is_absolute())
      dir->fail("not an absolute path: it names the folder the run was made in, from /; remove the field if unknown");
  }
  // Runs that predate the compact record list their pruned configs in trials.csv instead.
  if (root.has("pruning"))
    for (std::size_t i = 0; i < root["pruning"].size(); ++i) m.pruning.push_back(pruning_from(root["pruning"][i]));
  m.ktune_version = root["ktune_version"].string();
  const JsonPath versions = root["versions"];
  for (std::size_t i = 0; i < versions.size(); ++i)
    m.versions.emplace_back(versions[i]["name"].string(), versions[i]["version"].string());
  m.started_at = root["started_at"].string();
  m.finished_at = root["finished_at"].string();
  m.state = root["state"].string();
  if (!kRunStates.count(m.state))
    root["state"].fail("'" + m.state + "' is not one of running, finished, cancelled, failed");
  if (const auto rules = root.find("workload_rules")) {
    const std::int64_t v = rules->integer();
    if (v < 1 || v > std::numeric_limits<int>::max())
      rules->fail(std::to_string(v) + " is not a version of the workload rules (a whole number from 1)");
    m.workload_rules = static_cast<int>(v);
  } else {
    m.workload_rules = 1;
  }
  if (root.has("merged_from"))
    for (std::size_t i = 0; i < root["merged_from"].size(); ++i)
      m.merged_from.push_back(root["merged_from"][i].object());
  if (root.has("family_description")) m.family_description = root["family_description"].object();
  return m;
}

std::string current_working_directory() {
  std::error_code ec;
  const fs::path dir = fs::current_path(ec);
  return ec ? std::string() : dir.string();
}

std::vector<Trial> pruned_trials(const SearchSpace& space, const ProblemPruning& problem) {
  std::vector<std::pair<Config, std::string>> pruned;
  space.enumerate(problem.variables, &pruned);
  std::vector<Trial> out;
  out.reserve(pruned.size());
  for (auto& [config, why] : pruned) {
    Trial t;
    t.id = -1;
    t.problem_key = problem.problem;
    t.config = std::move(config);
    t.status = TrialStatus::Pruned;
    t.error = std::move(why);
    out.push_back(std::move(t));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// RunStore

RunStore::RunStore(fs::path dir, RunMetadata metadata)
    : dir_(std::move(dir)), metadata_(std::move(metadata)), param_names_(param_names(metadata_.space)) {}
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;
RunStore::~RunStore() = default;

namespace {

std::unique_ptr<std::ofstream> open_for_append(const fs::path& file) {
  auto out = std::make_unique<std::ofstream>(file, std::ios::binary | std::ios::app);
  if (!*out) throw RunError("cannot open " + file.string() + " for appending: " + std::strerror(errno));
  return out;
}

void write_metadata(const fs::path& dir, const RunMetadata& m) {
  write_file_atomic(dir / kMetadataFile, m.to_json().dump(2) + "\n");
}

void refuse_existing_run(const fs::path& dir) {
  if (fs::exists(dir / kMetadataFile))
    throw InputError(dir.string() + " already holds a run; use --resume or another --run-name");
}

FileLock lock_run_folder(const fs::path& dir) {
  std::optional<FileLock> lock = FileLock::try_acquire(dir / kLockFile);
  if (!lock)
    throw InputError(dir.string() +
                     " is in use by another ktune process (a run still going?); wait for it to end or "
                     "use another --run-name");
  return std::move(*lock);
}

}  // namespace

RunStore RunStore::create(const fs::path& dir, const RunMetadata& metadata) {
  refuse_existing_run(dir);
  for (const auto& name : param_names(metadata.space)) {
    const bool clashes = std::find(kLeadColumns.begin(), kLeadColumns.end(), name) != kLeadColumns.end() ||
                         std::find(kTailColumns.begin(), kTailColumns.end(), name) != kTailColumns.end() ||
                         name == kMetricsColumn;
    if (clashes) throw InputError("parameter '" + name + "' has the name of a trials.csv column; rename the parameter");
  }
  RunStore store(dir, metadata);
  store.lock_ = lock_run_folder(dir);
  refuse_existing_run(dir);  // again under the lock: another process may have created it since
  // trials.csv first: run_metadata.json is what marks a folder as a run, so a kill in between
  // leaves no run that cannot be resumed.
  write_file_atomic(dir / kTrialsFile, csv::format_record(trial_header(store.param_names_)));
  write_metadata(dir, metadata);
  store.trials_ = open_for_append(dir / kTrialsFile);
  return store;
}

RunStore RunStore::open_for_resume(const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw InputError(dir.string() + " is not a folder; --resume needs the folder of an earlier run");
  FileLock lock = lock_run_folder(dir);
  RunStore store(dir, read_metadata(dir));
  store.lock_ = std::move(lock);
  const fs::path trials = dir / kTrialsFile;
  const TrialsFile file = read_trials_file(trials);
  if (file.params != store.param_names_)
    throw InputError(trials.string() + ": its parameter columns (" + join(file.params, ",") +
                     ") do not match the run's search space (" + join(store.param_names_, ",") +
                     "); the folder is inconsistent, start a new run");
  if (file.torn_offset) {
    std::error_code ec;
    fs::resize_file(trials, *file.torn_offset, ec);
    if (ec) throw RunError("cannot cut the torn last row off " + trials.string() + ": " + ec.message());
  }
  store.metadata_.state = "running";
  store.metadata_.finished_at.clear();
  write_metadata(dir, store.metadata_);
  store.metrics_column_ = file.metrics_column;
  store.trials_ = open_for_append(trials);
  return store;
}

void RunStore::append(const Trial& trial) {
  errno = 0;
  *trials_ << csv::format_record(trial_row(trial, param_names_, metrics_column_));
  trials_->flush();
  if (!*trials_)
    throw RunError("cannot append to " + (dir_ / kTrialsFile).string() + ": " +
                   (errno ? std::strerror(errno) : "write refused") + " (disk full?)");
}

void RunStore::finish(const std::vector<ProblemResult>& results, const std::string& state) {
  if (state == "running" || !kRunStates.count(state))
    throw InputError("a run finishes as finished, cancelled or failed, not '" + state + "'");
  RunResults run;
  run.run_name = metadata_.run_name;
  run.family = metadata_.family;
  run.backend = metadata_.backend;
  run.device = metadata_.device.name;
  run.device_slug = metadata_.device.slug();
  run.method = to_string(metadata_.measure.method);
  run.finished_at = now_iso8601();
  for (const auto& r : results) {
    if (!r.best) continue;
    ResultEntry e;
    e.problem = r.problem;
    e.config = r.best->config;
    e.stats = r.best->stats;
    e.samples_ns = r.best->samples_ns;
    e.choice = r.choice;
    e.compile_time_s = r.best->compile_time_s;
    e.tflops = r.best->tflops;
    e.baseline_name = r.baseline_name;
    e.baseline = r.baseline;
    e.best_paired = r.best_paired;
    e.remeasured = r.remeasured;
    e.conditions = conditions_of(r.best->metrics);
    e.baseline_conditions = r.baseline_conditions;
    run.entries.push_back(std::move(e));
  }
  write_file_atomic(dir_ / kResultsFile, results_json(run).dump(2) + "\n");
  metadata_.state = state;
  metadata_.finished_at = run.finished_at;
  write_metadata(dir_, metadata_);
}

RunMetadata RunStore::read_metadata(const fs::path& dir) {
  const fs::path file = dir / kMetadataFile;
  if (!fs::exists(file)) throw InputError(file.string() + " not found: " + dir.string() + " is not a ktune run folder");
  const json j = read_json_file(file, "run metadata");
  try {
    return RunMetadata::from_json(j);
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what());
  }
}

std::vector<Trial> RunStore::read_trials(const fs::path& dir, std::optional<std::size_t>* torn_line) {
  const fs::path file = dir / kTrialsFile;
  const TrialsFile trials_file = read_trials_file(file);
  if (torn_line) *torn_line = trials_file.torn_line;
  std::vector<Trial> trials;
  trials.reserve(trials_file.rows.size());
  for (const auto& row : trials_file.rows) {
    try {
      trials.push_back(parse_trial(row.fields, trials_file.params, trials_file.metrics_column));
    } catch (const InputError& e) {
      throw InputError(file.string() + ":" + std::to_string(row.line) + ": " + e.what());
    }
  }
  return trials;
}

RunResults RunStore::read_results(const fs::path& dir) {
  const fs::path file = dir / kResultsFile;
  if (!fs::exists(file))
    throw InputError(file.string() + " not found: the run has not finished (resume it with --resume)");
  const RunMetadata metadata = read_metadata(dir);
  const json j = read_json_file(file, "run results");
  RunResults run;
  try {
    run = results_from(JsonPath(j));
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what());
  }
  for (auto& e : run.entries) e.config = in_space_order(e.config, metadata.space);
  // Readers list results in key order (M=64 before M=256), also for runs written before the
  // tuner sorted them.
  std::stable_sort(run.entries.begin(), run.entries.end(), [](const ResultEntry& a, const ResultEntry& b) {
    return compare_keys(a.problem.key(), b.problem.key()) < 0;
  });
  run.state = metadata.state;
  run.versions = metadata.versions;
  run.family_description = metadata.family_description;
  for (const auto& p : metadata.pruning) run.planned += p.planned;
  for (const auto& t : read_trials(dir)) run.measured += t.status != TrialStatus::Pruned;
  return run;
}

// ---------------------------------------------------------------------------------------------
// Exports

std::string export_trials_csv(const fs::path& run_dir) {
  const std::vector<std::string> params = param_names(RunStore::read_metadata(run_dir).space);
  const std::vector<Trial> trials = RunStore::read_trials(run_dir);
  std::map<std::string, double> best;  // problem key -> best median of its ok trials
  for (const auto& t : trials) note_best_median(t, best);
  std::vector<std::string> header = trial_header(params);
  header.insert(header.end(), kExportColumns.begin(), kExportColumns.end());
  std::string out = csv::format_record(header);
  for (const auto& t : trials) {
    std::vector<std::string> row = trial_row(t, params);
    row.push_back(t.config.key());
    const bool timed = t.status == TrialStatus::Ok && t.stats.count >= 2 && t.stats.median_ns > 0;
    row.push_back(timed ? format_double(t.stats.rel_error()) : "");
    const auto b = best.find(t.problem_key);
    row.push_back(t.status == TrialStatus::Ok && b != best.end() ? format_double(t.stats.median_ns / b->second) : "");
    out += csv::format_record(row);
  }
  return out;
}

json export_run_json(const fs::path& run_dir) {
  json trials = json::array();
  for (const auto& t : RunStore::read_trials(run_dir)) trials.push_back(trial_json(t));
  const bool finished = fs::exists(run_dir / kResultsFile);
  return {{"metadata", RunStore::read_metadata(run_dir).to_json()},
          {"trials", trials},
          {"results", finished ? results_json(RunStore::read_results(run_dir)) : json(nullptr)}};
}

}  // namespace ktune
