#pragma once
// `ktune tune`'s options: what the command line says, before it becomes a TuneRequest.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/strategy.h"

namespace ktune::cli {

struct TuneArgs {
  std::string family;
  std::string kernel_spec;
  std::vector<std::string> shapes;
  std::string space_file;
  std::string strategy = "exhaustive";
  std::size_t budget = 0;
  std::uint64_t seed = 0;
  std::string time_budget;  // "60s", "5m", seconds; empty = no limit
  int remeasure_top = 3;
  std::string method = "amortized";
  double noise_target = 0.01;
  double max_ms_per_config = 2000;
  double warmup_ms = 20;
  int min_samples = 5, max_samples = 100;
  bool no_slow_abort = false;
  bool rotate_buffers = false;
  double atol = 1e-2, rtol = 1e-2, max_mismatch = 0;
  int compile_threads = 0;
  std::string cache_dir;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  bool no_save = false, resume = false, update_registry = false, dry_run = false, quiet = false;
  int tp_size = 1;
  std::string tp_split_dim = "none";
  std::string replay;  // a run folder to replay instead of a device
  std::string shard;   // "I/N"
};

// Adds `tune` and its options (but --backend, --device, --registry and the worker options) to
// `app`; returns it.
CLI::App* add_tune_command(CLI::App& app, TuneArgs& a);

// The strategy the options ask for; throws InputError for an unknown strategy, a bad
// --time-budget or a negative --remeasure-top.
StrategySpec strategy_spec(const TuneArgs& a);

}  // namespace ktune::cli
