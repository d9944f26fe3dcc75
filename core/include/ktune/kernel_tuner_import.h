#pragma once
// Kernel Tuner cache files (tune_kernel(..., cache="file.json")) as ktune runs, so a landscape
// measured with Kernel Tuner can be diffed, exported, opened in the workbench and replayed.
//
// The file: {"device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
// "objective", "cache": {"v1,v2,...": {<param>: value, ..., "time": ms | "InvalidConfig" |
// "CompilationFailedConfig" | "RuntimeFailedConfig", "times": [ms, ...], "compile_time": ms,
// "GFLOP/s": ..., ...}}}. While Kernel Tuner runs, the file ends after an entry and its comma,
// without the closing braces; such a file reads as if it were closed. A gzip-compressed cache
// (cache.json.gz, as caches are shared) reads as the file it holds.
//
// A cache holds the recorded configs but not the kernel's restrictions: without them the run's
// space is the product of tune_params, of which a cache may hold a small part; with them
// (KernelTunerRestrictions) it is the space Kernel Tuner searched. Either way a replay searches
// the recorded configs (replay_backend.h).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ktune/run_store.h"
#include "ktune/trial.h"

namespace ktune {

// The kernel's restrictions, which the file does not hold: Kernel Tuner's `restrictions` written as
// ktune constraints (`block_size_x*block_size_y >= 32`; docs/kernel-tuner-caches.md), and/or a
// search space file (SearchSpace::load) whose parameters are the cache's tune_params, narrowed or
// listed as the user tuned them, with its own constraints. The constraints may read the
// parameters and the problem's fields (x, y, z).
struct KernelTunerRestrictions {
  std::vector<Constraint> constraints;
  std::optional<SearchSpace> space;
  bool empty() const { return constraints.empty() && !space; }
};

// How much of the run's space the cache covers.
struct CacheCoverage {
  std::uint64_t space_total = 0;             // configs of the space before its constraints
  std::optional<std::uint64_t> space_valid;  // after them; nullopt past kMaxSpaceSize (not counted)
  std::uint64_t in_space = 0;                // recorded configs the space holds
  // Recorded configs it does not hold, each as `cache["16,2"]: pruned by a*b <= 32 (...)`: those
  // Kernel Tuner measured or failed to compile or run (it ran them, so the restrictions given differ
  // from its own), and those it recorded as InvalidConfig (as it records configs that fail its
  // restrictions).
  std::vector<std::string> violating, invalid_outside;
};

struct KernelTunerCache {
  RunMetadata metadata;       // family, device, the one problem, the space (tune_params + restrictions)
  std::vector<Trial> trials;  // in the file's (measurement) order
  // Entries left out for a time that is not positive and finite, each as `cache["1,2"]: time -0.5 ms`.
  std::vector<std::string> skipped;
  CacheCoverage coverage;
  std::set<std::int64_t> outside_space;  // ids of the trials the space does not hold
};

// Reads a cache file. `family` names the kernel family (default: the file's kernel_name),
// `backend` the platform it ran on (the file does not say). Failure markers become statuses:
// InvalidConfig -> pruned, CompilationFailedConfig -> compile_error, RuntimeFailedConfig ->
// launch_error. Times (ms) become samples (ns); numbers beside them that are not Kernel Tuner's
// own bookkeeping (GFLOP/s, energy, power) become Trial::metrics. An entry with a time that is
// not positive and finite is no measurement: it is left out and listed in `skipped`. Throws
// InputError naming the file and the field, or the restriction (a constraint that does not parse
// or names an unknown variable, a space file whose parameters are not the cache's, restrictions
// that leave no config).
KernelTunerCache read_kernel_tuner_cache(const std::filesystem::path& file, const std::string& family = {},
                                         const std::string& backend = "cuda",
                                         const KernelTunerRestrictions& restrictions = {});

// Writes `cache` as a finished run in `run_dir` through RunStore (trials.csv, results.json); the
// best is the fastest ok trial the space holds. Throws InputError when run_dir already holds a run.
void write_imported_run(const std::filesystem::path& run_dir, KernelTunerCache cache);

}  // namespace ktune
