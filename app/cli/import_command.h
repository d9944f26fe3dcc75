#pragma once
// `ktune import kernel-tuner CACHE.json --run-name NAME --output-dir DIR`: another tuner's
// recorded measurements as a ktune run folder (diff, export, the workbench, tune --replay).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ktune::cli {

struct ImportArgs {
  std::string cache_file;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  std::string family;
  std::string backend = "cuda";
  std::vector<std::string> constraints;  // --constraint, the kernel's restrictions
  std::string space_file;                // --space
};

// Adds `import` with its `kernel-tuner` subcommand to `app`; returns `import`.
CLI::App* add_import_command(CLI::App& app, ImportArgs& args);
// Exit code 0; throws InputError (exit 2) naming the file and field for a bad cache file.
int run_import(const ImportArgs& args);

}  // namespace ktune::cli
