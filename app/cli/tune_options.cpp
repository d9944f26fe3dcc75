#include "tune_options.h"

#include "ktune/error.h"

namespace ktune::cli {

CLI::App* add_tune_command(CLI::App& app, TuneArgs& a) {
  auto* tune = app.add_subcommand("tune", "Tune a kernel family on a list of shapes");
  tune->add_option("family", a.family, "Kernel family (`ktune kernels`)");
  tune->add_option("--kernel-spec", a.kernel_spec, "Tune a user kernel described by a JSON spec (GPU backends)");
  tune->add_option("--shape,-s", a.shapes, "Shape, e.g. \"M=1,16,64 N=4096 K=4096\"; lists expand to their product; repeatable (default: the family's default shape, when every key field has a default)")
      ->take_all();
  tune->add_option("--space", a.space_file,
                   "Search space JSON file (default: the family's): candidate lists of integers, booleans or strings, "
                   "or a list of configs (\"configs\"); constraints compare strings with == '.cg' (`ktune space --help`)");
  tune->add_option("--strategy", a.strategy,
                   "exhaustive | random | local (hill climbing from the best so far) | genetic (population, tournament, "
                   "crossover, mutation to neighbouring values) | bayes (Gaussian process, expected improvement)")
      ->capture_default_str();
  tune->add_option("--budget", a.budget, "Configs per problem at most (0 = all); exhaustive ignores it")->capture_default_str();
  tune->add_option("--time-budget", a.time_budget,
                   "Search time per problem: 60s, 5m, 1h or plain seconds (default: no limit). The search stops between "
                   "two trials once the problem has spent it; on --resume the time its recorded trials took (from their "
                   "start times) counts against it, so a resumed run gets only what is left");
  tune->add_option("--remeasure-top", a.remeasure_top,
                   "After the search, time its best K configs again in alternation and let the fastest of those paired "
                   "numbers win (0 or 1: the search's best wins; on --replay the recorded samples are drawn again)")
      ->capture_default_str();
  tune->add_option("--shard", a.shard,
                   "Tune only shard I of N (0-based, I/N) of the (problem x config) pairs, for a cluster's job array; "
                   "a config belongs to a shard by a hash of its problem and config keys. Combine the shards' runs "
                   "with `ktune merge`");
  tune->add_option("--seed", a.seed, "Seed of the workload and of random strategies")->capture_default_str();
  tune->add_option("--method", a.method, "amortized (serving throughput) | per_launch (cold-cache latency)")->capture_default_str();
  tune->add_option("--noise-target", a.noise_target, "Stop sampling at this relative noise")->capture_default_str();
  tune->add_option("--max-ms-per-config", a.max_ms_per_config, "Time cap per config (warm-up + samples)")->capture_default_str();
  tune->add_option("--warmup-ms", a.warmup_ms, "Warm-up time per config")->capture_default_str();
  tune->add_option("--min-samples", a.min_samples, "Samples before the noise target may stop")->capture_default_str();
  tune->add_option("--max-samples", a.max_samples, "Samples at most")->capture_default_str();
  tune->add_flag("--no-slow-abort", a.no_slow_abort, "Measure every config fully, even hopeless ones");
  tune->add_flag("--rotate-buffers", a.rotate_buffers, "Rotate input copies larger than the cache (cold-cache throughput)");
  tune->add_option("--atol", a.atol, "Validation absolute tolerance")->capture_default_str();
  tune->add_option("--rtol", a.rtol, "Validation relative tolerance")->capture_default_str();
  tune->add_option("--max-mismatch", a.max_mismatch, "Allowed fraction of elements outside tolerance")->capture_default_str();
  tune->add_option("--compile-threads", a.compile_threads, "Threads preparing configs ahead (0 = all cores)");
  tune->add_option("--cache-dir", a.cache_dir, "Compile cache of GPU backends (default $KTUNE_CUDA_CACHE or ~/.cache/ktune)");
  tune->add_option("--run-name", a.run_name, "Run folder name under --output-dir: one name, no '/' (default <family>_<date>_<time>)");
  tune->add_option("--output-dir", a.output_dir, "Where runs are saved")->capture_default_str();
  tune->add_flag("--no-save", a.no_save, "Do not save the run");
  tune->add_flag("--resume", a.resume,
                 "Continue the run named by --run-name: its shapes, space, strategy and measurement settings come from "
                 "the run (an option given must match it); recorded trials are not measured again");
  tune->add_flag("--update-registry", a.update_registry, "Apply new and faster results to the registry afterwards");
  tune->add_flag("--dry-run", a.dry_run, "Print the plan (problems, space sizes, trials) without running");
  tune->add_flag("--quiet,-q", a.quiet, "No progress output");
  tune->add_option("--tp-size", a.tp_size, "Tensor-parallel degree: tune the local shape")->capture_default_str();
  tune->add_option("--tp-split-dim", a.tp_split_dim,
                   "out (column parallel) | in (row parallel) | heads (attention: q heads divided, kv heads divided "
                   "or replicated); may be left out when the family shards one way only (paged_attention)");
  tune->add_option("--replay", a.replay,
                   "Replay a recorded run folder (a ktune run or an imported Kernel Tuner cache) instead of a device: "
                   "the strategy proposes, the recorded trials answer")
      ->check(CLI::ExistingDirectory);
  return tune;
}

StrategySpec strategy_spec(const TuneArgs& a) {
  StrategySpec s{a.strategy, a.budget, a.seed};
  if (!a.time_budget.empty()) s.time_budget_s = parse_duration_s(a.time_budget);
  if (a.remeasure_top < 0) throw InputError("--remeasure-top must be 0 (off) or a number of configs, got " + std::to_string(a.remeasure_top));
  make_strategy(s);  // validates the name before anything runs
  return s;
}

}  // namespace ktune::cli
