#pragma once
// `ktune tune`'s options: what the command line says, before it becomes a TuneRequest.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/run_options.h"

namespace ktune::cli {

struct TuneArgs {
  std::string family;
  std::string kernel_spec;
  std::vector<std::string> shapes;
  std::string space_file;
  // Set by the flags of the core's option tables (run_options.h).
  StrategySpec strategy;
  MeasureSettings measure;
  Tolerance tolerance;
  // The inputs' seed (RunSettings::seed), apart from the strategy's (--seed), as the workbench
  // keeps them: a search repeated with another --seed times the same work.
  std::uint64_t workload_seed = 0;
  int compile_threads = 0;
  std::string cache_dir;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  bool no_save = false, resume = false, update_registry = false, dry_run = false, quiet = false;
  bool accept_flagged = false;
  int tp_size = 1;
  std::string tp_split_dim = "none";
  std::string replay;  // a run folder to replay instead of a device
  std::string shard;   // "I/N"
};

// Adds `tune` and its options (but --backend, --device, --registry and the worker options) to
// `app`; returns it.
CLI::App* add_tune_command(CLI::App& app, TuneArgs& a);

// --allow-source-outside-spec on `command`, which reads a --kernel-spec: the spec's "source" may
// then lie outside the spec's folder. It sets KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1 at parse time,
// so the worker processes the command starts (--isolate, --devices) inherit it.
void add_allow_source_outside_spec(CLI::App* command);

// The core's checks of the settings the options ask for, at parse time, naming the flags
// ("--atol: NaN is not a finite number; give a number >= 0"): InputError. With --resume, the
// settings are checked with the run's values for the options not given (resume_settings).
void check_tune_options(const TuneArgs& a);

}  // namespace ktune::cli
