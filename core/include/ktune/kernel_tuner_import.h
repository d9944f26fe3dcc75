#pragma once
// Kernel Tuner cache files (tune_kernel(..., cache="file.json")) as ktune runs, so a landscape
// measured with Kernel Tuner can be diffed, exported, opened in the workbench and replayed.
//
// The file: {"device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
// "objective", "cache": {"v1,v2,...": {<param>: value, ..., "time": ms | "InvalidConfig" |
// "CompilationFailedConfig" | "RuntimeFailedConfig", "times": [ms, ...], "compile_time": ms,
// "GFLOP/s": ..., ...}}}. While Kernel Tuner runs, the file ends after an entry and its comma,
// without the closing braces; such a file reads as if it were closed.
#include <filesystem>
#include <string>
#include <vector>

#include "ktune/run_store.h"
#include "ktune/trial.h"

namespace ktune {

struct KernelTunerCache {
  RunMetadata metadata;       // family, device, the one problem, the space of tune_params
  std::vector<Trial> trials;  // in the file's (measurement) order
  // Entries left out for a time that is not positive and finite, each as `cache["1,2"]: time -0.5 ms`.
  std::vector<std::string> skipped;
};

// Reads a cache file. `family` names the kernel family (default: the file's kernel_name),
// `backend` the platform it ran on (the file does not say). Failure markers become statuses:
// InvalidConfig -> pruned, CompilationFailedConfig -> compile_error, RuntimeFailedConfig ->
// launch_error. Times (ms) become samples (ns); numbers beside them that are not Kernel Tuner's
// own bookkeeping (GFLOP/s, energy, power) become Trial::metrics. An entry with a time that is
// not positive and finite is no measurement: it is left out and listed in `skipped`. Throws
// InputError naming the file and the field.
KernelTunerCache read_kernel_tuner_cache(const std::filesystem::path& file, const std::string& family = {},
                                         const std::string& backend = "cuda");

// Writes `cache` as a finished run in `run_dir` through RunStore (trials.csv, results.json).
// Throws InputError when run_dir already holds a run.
void write_imported_run(const std::filesystem::path& run_dir, KernelTunerCache cache);

}  // namespace ktune
