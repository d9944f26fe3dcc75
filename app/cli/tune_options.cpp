#include "tune_options.h"

#include <cstdlib>

#include "ktune/error.h"
#include "ktune/kernel_spec.h"

namespace ktune::cli {

namespace {

// A value the core reads from text (a duration, a method). Its InputError becomes CLI11's, so a
// bad value is reported like any other parse error.
template <class T>
void add_text_option(CLI::App* app, const char* flag, const char* doc, T& field,
                     std::function<T(const std::string&)> parse) {
  app->add_option_function<std::string>(
      flag,
      [flag, &field, parse](const std::string& text) {
        try {
          field = parse(text);
        } catch (const InputError& e) {
          throw CLI::ValidationError(flag, e.what());
        }
      },
      doc);
}

template <class S>
void add_flag(CLI::App* app, const Option<S>& o, bool& field) {
  if (o.flag_turns_off)
    app->add_flag_callback(
        o.flag, [&field] { field = false; }, o.doc);
  else
    app->add_flag(o.flag, field, o.doc);
}

template <class S>
void add_flag(CLI::App* app, const Option<S>& o, Method& field) {
  add_text_option<Method>(app, o.flag, o.doc, field, method_from_string);
  app->get_option(o.flag)->default_str(to_string(field));
}

template <class S, class T>
void add_flag(CLI::App* app, const Option<S>& o, T& field) {
  if constexpr (std::is_same_v<T, double>)
    if (o.parse_text) return add_text_option<double>(app, o.flag, o.doc, field, o.parse_text);
  std::string doc = o.doc;
  if constexpr (std::is_arithmetic_v<T>) doc += " (" + o.range.describe(std::is_integral_v<T>) + ")";
  CLI::Option* option = app->add_option(o.flag, field, doc)->capture_default_str();
  // CLI11 reads "-1" into an unsigned integer as its largest value.
  if constexpr (std::is_unsigned_v<T>)
    option->check(CLI::Validator(
        [range = o.range](std::string& text) {
          return text.starts_with('-') ? text + " is out of range; give " + range.describe(true) : std::string();
        },
        ""));
}

// One flag per option of a settings section, bound to its member of `into`.
template <class S>
void add_settings_flags(CLI::App* app, std::span<const Option<S>> options, S& into) {
  for (const Option<S>& o : options) std::visit([&](auto member) { add_flag(app, o, into.*member); }, o.member);
}

}  // namespace

CLI::App* add_tune_command(CLI::App& app, TuneArgs& a) {
  auto* tune = app.add_subcommand("tune", "Tune a kernel family on a list of shapes");
  tune->add_option("family", a.family, "Kernel family (`ktune kernels`)");
  tune->add_option("--kernel-spec", a.kernel_spec, "Tune a user kernel described by a JSON spec (GPU backends)");
  add_allow_source_outside_spec(tune);
  tune->add_option("--shape,-s", a.shapes,
                   "Shape, e.g. \"M=1,16,64 N=4096 K=4096\"; lists expand to their product; repeatable (default: the "
                   "family's default shape, when every key field has a default)")
      ->take_all();
  tune->add_option(
      "--space", a.space_file,
      "Search space JSON file (default: the family's): candidate lists of integers, booleans or strings, "
      "or a list of configs (\"configs\"); constraints compare strings with == '.cg' (`ktune space --help`)");
  tune->add_option("--shard", a.shard,
                   "Tune only shard I of N (0-based, I/N) of the (problem x config) pairs, for a cluster's job array; "
                   "a config belongs to a shard by a hash of its problem and config keys. Combine the shards' runs "
                   "with `ktune merge`");
  add_settings_flags(tune, strategy_options(), a.strategy);
  add_settings_flags(tune, measure_options(), a.measure);
  add_settings_flags(tune, tolerance_options(), a.tolerance);
  add_flag(tune, workload_seed_option(), a.workload_seed);
  tune->add_option("--compile-threads", a.compile_threads, "Threads preparing configs ahead (0 = all cores)");
  tune->add_option("--cache-dir", a.cache_dir,
                   "Compile cache of GPU backends (default $KTUNE_CUDA_CACHE or ~/.cache/ktune)");
  tune->add_option("--run-name", a.run_name,
                   "Run folder name under --output-dir: one name, no '/' (default <family>_<date>_<time>)");
  tune->add_option("--output-dir", a.output_dir, "Where runs are saved")->capture_default_str();
  tune->add_flag("--no-save", a.no_save, "Do not save the run");
  tune->add_flag("--resume", a.resume,
                 "Continue the run named by --run-name: its shapes, space, strategy and measurement settings come from "
                 "the run (an option given must match it); recorded trials are not measured again");
  tune->add_flag("--update-registry", a.update_registry,
                 "Apply new and faster results to the registry afterwards (not flagged ones: see --accept-flagged)");
  tune->add_flag("--accept-flagged", a.accept_flagged,
                 "With --update-registry, also apply winners whose number is flagged (noisy, or re-measured more than "
                 "10 % off the search)");
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

void add_allow_source_outside_spec(CLI::App* command) {
  command->add_flag_callback(
      "--allow-source-outside-spec", [] { setenv(kAllowSourceOutsideSpecEnv, "1", 1); },
      "Let a --kernel-spec's \"source\" lie outside the spec's folder. By default it must resolve (symlinks and "
      "\"..\" followed) inside it, so a spec handed to you reads no other file; the same as "
      "KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1");
}

void check_tune_options(const TuneArgs& a) {
  check_number("--compile-threads", a.compile_threads, kCompileThreadsRange, true);
  if (a.resume) return;
  validate(a.strategy, OptionNames::Cli);
  validate(a.measure, OptionNames::Cli);
  validate(a.tolerance, OptionNames::Cli);
}

}  // namespace ktune::cli
