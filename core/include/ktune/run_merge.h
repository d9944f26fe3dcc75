#pragma once
// merge_runs: the shard runs of one tune (`ktune tune --shard I/N` on N machines) combined into
// one run folder, as if one machine had tuned it unsharded: trials.csv holds every shard's trials
// (renumbered), results.json is recomputed from them, and run_metadata.json keeps each shard's
// metadata under "merged_from". The merged run diffs, applies and resumes like any other (a
// resume of a merge with a shard missing measures that shard's configs).
#include <filesystem>
#include <string>
#include <vector>

namespace ktune {

struct MergeOptions {
  // Merge shards that did not finish (cancelled, failed, killed) or a subset of the shards: the
  // merged run is then "cancelled" (partial), and `apply` asks for --allow-unfinished too.
  bool allow_unfinished = false;
  std::vector<std::string> arguments;  // the command line, for run_metadata.json
};

struct MergeReport {
  std::filesystem::path run_dir;
  std::size_t shards = 0, trials = 0, problems_with_result = 0;
  std::string state;  // finished | cancelled
  // "<shard>/trials.csv:<line>" of each torn last row left out (a shard killed mid-write, or
  // one marked finished whose file was cut short, merged with allow_unfinished)
  std::vector<std::string> torn_rows;
};

// Throws InputError naming the folder and what is wrong: a folder that is missing, not a run, in
// use, given twice, not a shard, unfinished (without allow_unfinished), marked finished but with a
// torn last row in trials.csv (without allow_unfinished; naming the file and line), of other settings, space,
// family, backend or device than the first (naming the field), a shard index given twice or
// missing, a trial in two shards; and when `out_dir` already holds a run. Nothing is written then.
MergeReport merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out_dir,
                       const MergeOptions& options);

}  // namespace ktune
