#pragma once
// `ktune merge RUN_DIR... --run-name NAME --output-dir DIR`: the shard runs of one tune
// (`ktune tune --shard I/N`) combined into one run folder (ktune/run_merge.h).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ktune::cli {

struct MergeArgs {
  std::vector<std::string> run_dirs;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  bool allow_unfinished = false;
};

CLI::App* add_merge_command(CLI::App& app, MergeArgs& args);
// Exit code 0, or 1 when the merged run is partial; throws InputError (exit 2) for bad shards.
int run_merge(const MergeArgs& args, const std::vector<std::string>& argv);

}  // namespace ktune::cli
