#pragma once
// RunStore: tuning_runs/<run>/ on disk.
//   run_metadata.json  arguments, device, versions, space, measurement settings, times, state
//   trials.csv         every trial, appended and flushed as it finishes (a killed run resumes)
//   results.json       best config per problem with stats, ready to diff and apply
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/device.h"
#include "ktune/files.h"
#include "ktune/measurement.h"
#include "ktune/problem.h"
#include "ktune/run_settings.h"
#include "ktune/search_space.h"
#include "ktune/strategy.h"
#include "ktune/trial.h"
#include "ktune/winner.h"
#include "ktune/workload_rules.h"

namespace ktune {

struct ProblemResult;

// The process's working folder, absolute, for RunMetadata::working_directory; empty when it is
// gone (removed under the process): a record of a folder that does not exist would mislead.
std::string current_working_directory();

// An exclusive flock(2) on `file` (created if missing, its folder too), released when the
// FileLock is destroyed or its process dies, however it dies.
class FileLock {
 public:
  // Waits for the lock. Throws RunError when the file cannot be opened.
  static FileLock acquire(const std::filesystem::path& file);
  // Nothing when another process (or another FileLock) holds it.
  static std::optional<FileLock> try_acquire(const std::filesystem::path& file);

  FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// How pruning went for one problem: counts per constraint instead of one trials.csv row per
// pruned config. Pruning is deterministic, so `variables` (the problem's and the device's) and the
// run's space re-enumerate the pruned configs when someone asks (pruned_trials()).
struct ProblemPruning {
  std::string problem;  // Problem::key()
  Variables variables;
  PruneReport report;
  std::uint64_t planned = 0;  // configs the strategy measures
};

struct RunMetadata : RunSettings {
  std::string run_name;
  std::string family;
  std::string backend;
  DeviceInfo device;
  std::vector<std::string> arguments;
  // The absolute folder the process that made the run worked in: what relative paths in
  // `arguments` (a worker's script, a kernel spec) mean, so that a front end reading the run from
  // elsewhere finds them. Empty for runs that predate the record.
  std::string working_directory;
  std::vector<ProblemPruning> pruning;  // one per problem; empty for runs that predate it
  std::string ktune_version;
  std::vector<std::pair<std::string, std::string>> versions;  // compilers, runtimes
  std::string started_at;                                     // ISO 8601 UTC
  std::string finished_at;                                    // empty while running
  std::string state = "running";                              // running | finished | cancelled | failed
  // The workload rules its inputs were made under (workload_rules.h): 1 for runs that predate the
  // record, which a resume or a merge holds against this ktune's and the family's.
  int workload_rules = kWorkloadRules;
  // A run made by `ktune merge`: the run_metadata.json of every shard it combines; empty otherwise.
  std::vector<nlohmann::json> merged_from;
  // The family as data (describe_family, family_description.h) when it is not built into ktune
  // (a worker's, a kernel spec's), for registry commands without the worker; null otherwise.
  nlohmann::json family_description;

  nlohmann::json to_json() const;
  static RunMetadata from_json(const nlohmann::json& j);  // throws InputError
};

// One row of results.json: the winner of one problem, with the stats and samples it was chosen
// by (its re-measure's when choice.by is Remeasure; choice.search keeps its search numbers).
struct ResultEntry {
  Problem problem;
  Config config;
  Stats stats;
  std::vector<double> samples_ns;
  Choice choice;
  double compile_time_s = 0;
  double tflops = 0;
  std::string baseline_name;
  std::optional<Stats> baseline;     // same-run reference timing (cuBLAS, OpenBLAS) ...
  std::optional<Stats> best_paired;  // ... and the best config's, alternating with it
  // The search's best few, timed again in alternation; `config` is the fastest of them.
  std::vector<Remeasured> remeasured;
  // The device's conditions while `stats` and `baseline` were measured (empty: not read).
  Conditions conditions, baseline_conditions;
};

struct RunResults {
  std::string run_name;
  std::string family;
  std::string backend;
  std::string device;  // the device's name, as its backend reports it
  std::string device_slug;
  std::string method;  // benchmarking method of the run
  std::string finished_at;
  std::vector<ResultEntry> entries;
  // From run_metadata.json and trials.csv as they are now (read_results), not from results.json:
  // a run resumed since has a results.json of an earlier state.
  std::string state;                                          // finished | cancelled | failed | running
  std::vector<std::pair<std::string, std::string>> versions;  // the run's driver, toolkit, compilers
  std::uint64_t measured = 0;                                 // configs measured (every trial but pruned ones)
  std::uint64_t planned = 0;          // configs the strategy meant to measure; 0 for runs that predate the record
  nlohmann::json family_description;  // RunMetadata's: apply keeps it in the registry
};

class RunStore {
 public:
  // Creates dir with run_metadata.json and an empty trials.csv (header from the space's
  // parameters). Throws InputError if dir already holds a run (use open_for_resume).
  // The store holds a lock on the folder (.ktune.lock) while it lives: a second create or
  // resume of the same folder meanwhile, from any process, is an InputError.
  static RunStore create(const std::filesystem::path& dir, const RunMetadata& metadata);
  // Opens an existing run to append to it. Throws InputError when it is missing or malformed, or
  // when trials.csv's columns do not match the run's space. A torn last row is cut off so the
  // next append starts on a fresh line; the run's state goes back to "running".
  static RunStore open_for_resume(const std::filesystem::path& dir);

  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  ~RunStore();

  const std::filesystem::path& dir() const { return dir_; }
  const RunMetadata& metadata() const { return metadata_; }

  // Appends one row and flushes it to the OS, so a kill loses at most the trial in flight.
  // A refused write is a RunError naming trials.csv.
  void append(const Trial& trial);
  // Writes results.json atomically (the best trial of each problem that has one) and marks the
  // run's state ("finished", "cancelled" or "failed") and end time in run_metadata.json.
  void finish(const std::vector<ProblemResult>& results, const std::string& state);

  static RunMetadata read_metadata(const std::filesystem::path& dir);  // throws InputError
  // Parses trials.csv; a malformed row is an InputError naming the file and line. A torn last
  // line (the run was killed while writing it) is dropped, not an error; its line number goes to
  // `torn_line` when given (none without one), for readers to which a torn row means more: in a
  // run marked finished, the file was cut short after the run (an interrupted copy).
  static std::vector<Trial> read_trials(const std::filesystem::path& dir,
                                        std::optional<std::size_t>* torn_line = nullptr);
  // Configs come back in the order of the run's space, with the run's state and counts. Throws
  // InputError.
  static RunResults read_results(const std::filesystem::path& dir);

 private:
  RunStore(std::filesystem::path dir, RunMetadata metadata);
  std::filesystem::path dir_;
  RunMetadata metadata_;
  std::vector<std::string> param_names_;
  bool metrics_column_ = true;  // false when resuming a trials.csv written before that column
  std::optional<FileLock> lock_;
  std::unique_ptr<std::ofstream> trials_;
};

// The configs pruned for one problem, re-enumerated from the run's space and the problem's
// pruning record: trials with status pruned, id -1, and the failing constraint as error.
std::vector<Trial> pruned_trials(const SearchSpace& space, const ProblemPruning& problem);

std::string now_iso8601();
// "gemm_20261123_043000": default run name.
std::string default_run_name(const std::string& family);
// The folder of run `name` under `output_dir`. A run name is one path component, so the run
// stays inside output_dir: an empty name, ".", "..", a name with '/' and one longer than the
// file system allows are an InputError saying what to give instead.
std::filesystem::path run_folder(const std::filesystem::path& output_dir, const std::string& name);

// Exports of a run for other tools.
std::string export_trials_csv(const std::filesystem::path& run_dir);   // trials.csv with derived columns
nlohmann::json export_run_json(const std::filesystem::path& run_dir);  // metadata + trials + results

}  // namespace ktune
