#include "merge_command.h"

#include <iostream>

#include "ktune/run_merge.h"
#include "ktune/run_store.h"

namespace ktune::cli {

CLI::App* add_merge_command(CLI::App& app, MergeArgs& a) {
  auto* merge = app.add_subcommand(
      "merge",
      "Combine the runs of `ktune tune --shard I/N` into one run folder: every shard's trials (each (problem, config) "
      "at most once), results recomputed, each shard's metadata kept under merged_from; shards of other settings, "
      "space or device are refused, naming the difference");
  merge->add_option("run_dirs", a.run_dirs, "The shards' run folders")->required();
  merge->add_option("--run-name", a.run_name,
                    "Merged run folder name under --output-dir (default <family>_merged_<date>_<time>)");
  merge->add_option("--output-dir", a.output_dir, "Where the merged run is saved")->capture_default_str();
  merge->add_flag("--allow-unfinished", a.allow_unfinished,
                  "Merge shards that did not finish, or not every shard: the merged run is then cancelled (partial) "
                  "and `apply` needs --allow-unfinished too");
  return merge;
}

int run_merge(const MergeArgs& a, const std::vector<std::string>& argv) {
  std::string name = a.run_name;
  if (name.empty()) name = default_run_name(RunStore::read_metadata(a.run_dirs.front()).family + "_merged");
  std::vector<std::filesystem::path> dirs(a.run_dirs.begin(), a.run_dirs.end());
  const MergeReport r = merge_runs(dirs, run_folder(a.output_dir, name), {a.allow_unfinished, argv});
  std::cout << "merged " << r.shards << " shard(s): " << r.trials << " trials, a best config for "
            << r.problems_with_result << " problem(s); run " << r.state << ", saved in " << r.run_dir.string() << "\n";
  for (const auto& row : r.torn_rows)
    std::cout << "left out the torn last row " << row << " (cut off mid-write); resuming the merged run measures it\n";
  if (r.state != "finished")
    std::cout << "the merged run is partial (a shard unfinished, torn or missing): apply needs --allow-unfinished\n";
  std::cout << "see it with: ktune diff " << r.run_dir.string() << "\n";
  return r.state == "finished" ? 0 : 1;
}

}  // namespace ktune::cli
