// ktune: tune kernels, inspect runs, diff and apply them to the registry, from a terminal.
// Exit codes: 0 ok, 1 the run finished with errors worth attention, 2 usage or input error.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "import_command.h"
#include "info_commands.h"
#include "ktune/backends.h"
#include "ktune/diff.h"
#include "ktune/error.h"
#include "ktune/judge.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "ktune/tuner.h"
#include "ktune/version.h"
#include "merge_command.h"
#include "progress_printer.h"
#include "registry_command.h"
#include "replay_command.h"
#include "resume_args.h"
#include "tune_options.h"
#include "worker_command.h"

namespace fs = std::filesystem;
using namespace ktune;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitAttention = 1;
constexpr int kExitInput = 2;

Tuner* g_running = nullptr;
volatile std::sig_atomic_t g_interrupted = 0;  // no further run starts (--devices over several models)
extern "C" void on_sigint(int) {
  g_interrupted = 1;
  if (g_running) g_running->cancel();
}

struct Common {
  std::string backend = "cpu";
  int device = 0;
  std::string registry = "tuned_data";
};

KernelFamily pick_family(Backend& backend, const std::string& name, const std::string& spec) {
  if (!spec.empty()) {
    KernelFamily f = backend.load_family_spec(spec);
    if (!name.empty() && name != f.name)
      throw InputError("kernel spec " + spec + " defines '" + f.name + "', not '" + name + "'");
    return f;
  }
  if (name.empty()) throw InputError("name a kernel family (`ktune kernels` lists them) or give --kernel-spec FILE");
  return backend.family(name);
}

// The shapes to use when none is given: the family's default shape ("" expands to every key
// field's default), or an error that shows this family's own key fields.
std::vector<std::string> shapes_or_default(const KernelFamily& family, const std::vector<std::string>& shapes,
                                           const std::string& what) {
  if (!shapes.empty()) return shapes;
  std::string example, missing;
  for (const auto& f : family.key_fields) {
    example += (example.empty() ? "" : " ") + f.name + "=" + (f.default_value.empty() ? "4096" : f.default_value);
    if (f.default_value.empty()) missing += (missing.empty() ? "" : ", ") + f.name;
  }
  if (!missing.empty())
    throw InputError("give --shape (e.g. --shape \"" + example + "\") " + what + ": " + family.name +
                     " has no default for " + missing);
  return {""};
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

void print_diff(const RunResults& run, const RegistryDiff& diff) {
  std::cout << "run " << run.run_name << ": " << run.state << " (" << describe_progress(run) << ")";
  if (run.state != "finished") std::cout << ": its results are partial";
  std::cout << "\ndiff against " << diff.registry_file.string() << ":\n";
  std::vector<std::vector<std::string>> rows{
      {"class", "family", "key", "old", "new", "ratio", "compared", "new config"}};
  for (const auto& d : diff.entries) {
    char ratio[32] = "-";
    if (d.old_entry && d.ratio > 0) std::snprintf(ratio, sizeof ratio, "%.3fx", d.ratio);
    std::string cls = to_string(d.cls);
    if (d.new_entry.flags.any()) cls += " (flagged)";
    rows.push_back({cls, d.family, d.key, d.old_entry ? (d.old_ns > 0 ? format_ns(d.old_ns) : "unmeasured") : "-",
                    format_ns(d.new_ns), ratio, d.compared, d.new_entry.config.key()});
  }
  print_table(rows);
  // What the table's ratios cannot show: numbers taken at different clocks.
  for (const auto& d : diff.entries)
    if (!d.conditions_note.empty())
      std::cout << "note: " << d.family << " " << d.key << ": " << d.conditions_note << '\n';
}

int cmd_space(Backend& backend, const Common& c, const std::string& family_name, const std::string& spec,
              const std::string& space_file, const std::vector<std::string>& shapes, bool json) {
  const KernelFamily family = pick_family(backend, family_name, spec);
  const SearchSpace space =
      space_file.empty() ? family.default_space : family.user_space(SearchSpace::load(space_file));
  if (json) {
    std::cout << space.to_json().dump(2) << '\n';
    return kExitOk;
  }
  std::cout << family.name << " on " << backend.name() << ": " << space.parameters().size() << " parameters";
  if (space.is_list()) std::cout << ", a list of " << space.configs().size() << " configs";
  std::cout << '\n';
  for (const auto& p : space.parameters()) {
    std::string vals;
    for (const auto& v : p.values) vals += (vals.empty() ? "" : ", ") + v.text();
    std::cout << "  " << p.name << " = [" << vals << "]" << (p.description.empty() ? "" : "  " + p.description) << '\n';
  }
  std::cout << "constraints:\n";
  for (const auto& k : space.constraints())
    std::cout << "  " << k.expr << (k.description.empty() ? "" : "  (" + k.description + ")") << '\n';
  const DeviceInfo device = find_device(backend, c.device);
  // Pruning depends on the problem; without --shape it is counted for the family's default shape.
  std::vector<std::string> use;
  try {
    use = shapes_or_default(family, shapes, "to count the configs left after pruning");
  } catch (const InputError& e) {
    std::cout << e.what() << '\n';
    return kExitOk;
  }
  for (const auto& p : expand_shapes(family, use)) {
    Variables ctx = device.variables();
    for (const auto& [k, v] : family.variables(p)) ctx[k] = v;
    const PruneReport r = space.prune_report(ctx);
    require_valid_configs(r, family.name + " " + p.key());
    std::cout << p.key() << " on " << device.name << ": " << r.total << " configs, " << r.valid << " after pruning\n";
    for (const auto& [expr, n] : r.pruned_by)
      if (n) std::cout << "    " << n << " pruned by " << expr << '\n';
  }
  return kExitOk;
}

// `update_registry`: apply the run afterwards with these options; null: print the apply command.
int run_and_report(Backend& backend, const DeviceInfo& device, const TuneRequest& req, const Common& c, bool quiet,
                   const ApplyOptions* update_registry, const std::vector<Lane>& lanes = {});

// `resumed`: the run --resume continues (its settings win over defaults; given options must agree).
// `lanes`: the devices of --devices that measure it together (empty: `backend`'s device c.device).
int cmd_tune(Backend& backend, const Common& c, const cli::TuneArgs& a, const std::vector<std::string>& argv,
             const RunMetadata* resumed, const cli::Given& given, const std::vector<Lane>& lanes = {}) {
  const ShardSpec shard = a.shard.empty() ? ShardSpec{} : parse_shard(a.shard);
  const KernelFamily family = pick_family(backend, a.family, a.kernel_spec);

  TuneRequest req;
  req.family = family;
  // A resumed run's shapes come from the run; otherwise none given tunes the family's default shape.
  const std::vector<std::string> shapes = resumed ? a.shapes : shapes_or_default(family, a.shapes, "to tune");
  req.problems = expand_shapes(family, shapes, a.tp_size, tp_split_dim_from_string(a.tp_split_dim));
  req.space = a.space_file.empty() ? family.default_space : family.user_space(SearchSpace::load(a.space_file));
  req.strategy = a.strategy;
  req.measure = a.measure;
  req.tolerance = a.tolerance;
  req.seed = a.workload_seed;
  req.shard = shard;
  if (resumed) req.settings() = cli::resume_settings(*resumed, req.settings(), given);
  req.compile_threads = a.compile_threads;
  req.arguments = argv;
  const std::string run_name = a.run_name.empty() ? default_run_name(family.name) : a.run_name;
  if (!a.no_save) req.run_dir = run_folder(a.output_dir, run_name);
  req.resume = a.resume;

  const DeviceInfo device = find_device(backend, c.device);
  if (a.dry_run) {
    std::cout << "dry run: " << family.name << " on " << device.name << " (" << backend.name() << "), strategy "
              << req.strategy.kind << ", method " << to_string(req.measure.method) << "\n";
    std::uint64_t total = 0;
    for (const auto& p : unique_problems(req.problems)) {
      Variables ctx = device.variables();
      for (const auto& [k, v] : family.variables(p)) ctx[k] = v;
      PruneReport r;
      auto s = make_strategy(req.strategy, req.shard, p.key());
      s->reset(req.space.enumerate(ctx, nullptr, &r));
      require_valid_configs(r, family.name + " " + p.key());
      total += s->planned();
      std::cout << "  " << p.key() << ": " << r.total << " configs, " << r.valid << " after pruning, " << s->planned()
                << " to measure\n";
    }
    std::cout << total << " trials; run folder "
              << (req.run_dir.empty() ? std::string("(not saved)") : req.run_dir.string()) << "\n";
    return kExitOk;
  }

  ApplyOptions apply;
  apply.accept_flagged = a.accept_flagged;
  return run_and_report(backend, device, req, c, a.quiet, a.update_registry ? &apply : nullptr, lanes);
}

// The run --resume continues (--run-name), its backend, device and family taken into `c` and `a`.
// `worker`: the --worker command ("" for none), checked against the one that measured the run.
std::optional<RunMetadata> run_to_resume(const cli::TuneArgs& a, const cli::Given& given, Common& c,
                                         std::string& family, const std::string& worker) {
  if (!a.resume) return std::nullopt;
  if (a.run_name.empty()) throw InputError("--resume needs --run-name of the run to continue");
  if (a.no_save) throw InputError("--resume and --no-save contradict each other");
  const auto dir = run_folder(a.output_dir, a.run_name);
  RunMetadata run = cli::read_run_to_resume(dir);
  cli::check_resume_paths(run, worker, a.kernel_spec);
  cli::check_resume_worker(run, dir, worker, std::cerr);
  cli::take_run_target(run, given, c.backend, c.device, family);
  return run;
}

// --devices over several devices: a run per model (registry slug), measured by its devices together.
int tune_on_devices(cli::DeviceWorkers& dw, const Common& c, cli::TuneArgs a, const std::vector<std::string>& argv,
                    const cli::Given& given, const std::string& worker) {
  Backend& first = *dw.groups.front().lanes.front().backend;
  if (a.family.empty() && a.kernel_spec.empty() && first.families().size() == 1)
    a.family = first.families().front().name;
  const std::string base = a.run_name.empty() ? default_run_name(a.family.empty() ? "run" : a.family) : a.run_name;
  int rc = kExitOk;
  for (const auto& group : dw.groups) {
    if (g_interrupted) break;
    cli::TuneArgs on_group = a;
    on_group.run_name = dw.groups.size() > 1 ? base + "-" + group.slug : base;
    Common on_worker = c;
    const auto resumed = run_to_resume(on_group, given, on_worker, on_group.family, worker);
    on_worker.device = 0;
    if (!a.quiet) {
      std::cerr << "devices " << group.lanes.front().device.name << ":";
      for (const auto& l : group.lanes) std::cerr << " " << l.device.index;
      std::cerr << " -> run " << on_group.run_name << "\n";
    }
    rc = std::max(rc, cmd_tune(*group.lanes.front().backend, on_worker, on_group, argv, resumed ? &*resumed : nullptr,
                               given, group.lanes));
  }
  return rc;
}

int run_and_report(Backend& backend, const DeviceInfo& device, const TuneRequest& req, const Common& c, bool quiet,
                   const ApplyOptions* update_registry, const std::vector<Lane>& lanes) {
  const KernelFamily& family = req.family;
  Tuner tuner(lanes.empty() ? std::vector<Lane>{{&backend, device}} : lanes);
  cli::ProgressPrinter printer(stderr, quiet);
  g_running = &tuner;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  RunSummary summary;
  try {
    summary = tuner.run(req, printer);
  } catch (...) {
    g_running = nullptr;
    throw;
  }
  g_running = nullptr;

  std::cout << "\nbest configs (" << family.name << " on " << device.name << ", " << to_string(req.measure.method)
            << "):\n";
  std::vector<std::vector<std::string>> rows{
      {"problem", "best config", "median", "chosen by", "search median", "TFLOP/s", "vs baseline"}};
  bool attention = summary.cancelled;
  for (const auto& r : summary.results) {
    if (!r.best) {
      // A shard may hold no config of a problem, or only failing ones: the merge has the verdict.
      rows.push_back(
          {r.problem.key(),
           req.shard.sharded() ? "(none passed in shard " + req.shard.to_string() + ")" : "(no config passed)", "-",
           "-", "-", "-", "-"});
      attention = attention || !req.shard.sharded();
      continue;
    }
    char tf[32] = "-", base[48] = "-";  // no FLOP count (a replayed spec kernel, a worker's family): "-"
    if (r.best->tflops > 0) std::snprintf(tf, sizeof tf, "%.3f", r.best->tflops);
    if (const auto x = r.speedup()) std::snprintf(base, sizeof base, "%.2fx %s", *x, r.baseline_name.c_str());
    std::string by = describe(r.choice.by);
    if (r.choice.flags.any()) by += " (flagged)";
    rows.push_back({r.problem.key(), r.best->config.key(), format_ns(r.best->stats.median_ns), by,
                    format_ns(r.choice.search.median_ns), tf, base});
  }
  print_table(rows);
  for (const auto& r : summary.results)
    if (r.best)
      for (const auto& line : describe_flags(r.problem.key(), r.best->stats, r.choice))
        std::cout << "warning: " << line << "\n";
  for (const auto& r : summary.results) {
    if (r.remeasured.empty()) continue;
    std::cout << "re-measured in alternation, " << r.problem.key() << ":";
    for (const auto& m : r.remeasured)
      std::cout << "\n  " << (r.best && m.config == r.best->config ? "* " : "  ") << m.config.key() << "  "
                << format_ns(m.stats.median_ns) << " (search " << format_ns(m.search_median_ns) << ")"
                << (m.conditions.empty() ? "" : "  at " + describe(m.conditions));
    std::cout << "\n";
  }
  std::string counts;
  for (const auto& [k, n] : summary.status_counts) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  std::cout << "trials: " << counts << " in " << summary.elapsed_s << " s" << (summary.cancelled ? " (cancelled)" : "")
            << "\n";
  for (const char* bad : {"wrong_result", "crashed"})
    if (summary.status_counts.count(bad)) {
      std::cout << "attention: " << summary.status_counts[bad] << " trial(s) " << bad
                << " — the kernel has configs that are wrong or fault; see trials.csv\n";
      attention = true;
    }

  if (!req.run_dir.empty()) {
    std::cout << "run saved in " << req.run_dir.string() << " (run_metadata.json, trials.csv, results.json)\n";
    const RunResults results = RunStore::read_results(req.run_dir);
    print_diff(results, diff_run(results, c.registry));
    if (update_registry && results.state != "finished") {
      std::cout << "registry not updated: the run is " << results.state << " and its results are partial\n";
      attention = true;
    } else if (update_registry) {
      const ApplyReport rep = apply_run(results, c.registry, *update_registry);
      for (std::size_t i = 0; i < rep.skipped.size(); ++i)
        std::cout << "skipped " << rep.skipped[i].key << ": " << rep.skip_reasons[i] << '\n';
      std::cout << "registry " << rep.registry_file.string() << ": " << rep.written.size() << " entr"
                << (rep.written.size() == 1 ? "y" : "ies") << " written, " << rep.skipped.size() << " skipped\n";
    } else {
      std::cout << "apply with: ktune apply " << req.run_dir.string() << " --registry " << c.registry << "\n";
    }
  }
  return attention ? kExitAttention : kExitOk;
}

// `apply --remeasure`: the registry's config and the run's, timed side by side on the run's
// device now; their paired ratios class the keys.
std::vector<PairedVerdict> judge(const fs::path& run_dir, const RunResults& results, const std::string& registry,
                                 const std::vector<std::unique_ptr<Backend>>& backends) {
  const std::vector<PairedVerdict> verdicts = judge_run(results, RunStore::read_metadata(run_dir), registry, backends);
  for (const auto& v : verdicts) {
    if (!v.note.empty()) {
      std::cout << "re-measure " << v.key << ": " << v.note << "; the recorded numbers decide\n";
      continue;
    }
    std::cout << "re-measured " << v.key << " in alternation: registry config "
              << format_ns(summarize(v.registry_samples_ns).median_ns) << ", run's config "
              << format_ns(summarize(v.run_samples_ns).median_ns) << "\n";
  }
  if (verdicts.empty()) std::cout << "re-measure: no key has another config in the registry; nothing to time\n";
  return verdicts;
}

int cmd_apply(const fs::path& run_dir, const std::string& registry, const ApplyOptions& opt) {
  const RunResults results = RunStore::read_results(run_dir);
  const bool dry_run = opt.dry_run;
  const RegistryDiff diff = diff_run(results, registry, opt.same_threshold, opt.paired);
  print_diff(results, diff);
  const ApplyReport rep = apply_run(results, registry, opt);
  for (std::size_t i = 0; i < rep.skipped.size(); ++i)
    std::cout << "skipped " << rep.skipped[i].key << ": " << rep.skip_reasons[i] << '\n';
  for (const auto& w : rep.written)
    std::cout << (dry_run ? "would write " : "wrote ") << w.family << " " << w.key << " -> " << w.new_entry.config.key()
              << '\n';
  if (dry_run)
    std::cout << "dry run: nothing written\n";
  else if (rep.changed())
    std::cout << "registry " << rep.registry_file.string() << " updated"
              << (rep.backup_file.empty() ? "" : "; previous version kept as " + rep.backup_file.string()) << '\n';
  else
    std::cout << "registry " << rep.registry_file.string() << " unchanged\n";
  return kExitOk;
}

}  // namespace

int run_command(int argc, char** argv) {
  CLI::App app{
      "ktune: find the fastest configuration of a kernel for each problem shape, keep the winners in a registry"};
  app.set_version_flag("--version", std::string("ktune ") + version());
  app.require_subcommand(1);
  app.footer(file_limit_help());
  // Usage errors read like every other refused input (exit 2, "ktune: error: ...").
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return "ktune: error: " + CLI::FailureMessage::simple(a, e); });
  Common common;
  auto add_common = [&](CLI::App* sub, bool with_registry) {
    sub->add_option("--backend,-b", common.backend, "Backend: cpu, cuda, hip (see `ktune devices`)")
        ->capture_default_str();
    sub->add_option("--device", common.device, "Device index within the backend")->capture_default_str();
    if (with_registry)
      sub->add_option("--registry", common.registry, "Registry root (holds <backend>/<device>.json)")
          ->capture_default_str();
  };

  bool json = false;
  auto* devices = app.add_subcommand("devices", "List backends, devices and their properties");
  devices->add_flag("--json", json, "Print JSON");

  std::string kernels_backend;
  auto* kernels = app.add_subcommand("kernels", "List kernel families per backend");
  kernels->add_option("--backend,-b", kernels_backend, "Only this backend");

  cli::TuneArgs ta;
  std::string space_family;
  std::vector<std::string> space_shapes;
  auto* space = app.add_subcommand("space", "Show a family's search space and its size before and after pruning");
  space->add_option("family", space_family, "Kernel family");
  space->add_option(
      "--space", ta.space_file,
      "Search space JSON file instead of the family's default: {\"parameters\": {NAME: [values]}} (integers, "
      "booleans or strings) or {\"configs\": [{NAME: value, ...}, ...]}, plus \"constraints\"");
  space->add_option("--kernel-spec", ta.kernel_spec, "Kernel spec JSON (GPU backends)");
  cli::add_allow_source_outside_spec(space);
  space->add_option("--shape", space_shapes, "Problem shape(s) to count pruning for");
  space->add_flag("--json", json, "Print the space as JSON (a starting point for --space)");
  add_common(space, false);

  auto* tune = cli::add_tune_command(app, ta);
  add_common(tune, true);
  cli::WorkerArgs worker_args;
  cli::add_worker_options(tune, worker_args);
  cli::ServeArgs serve_args;
  auto* worker = cli::add_worker_subcommand(app, serve_args);

  std::string run_dir;
  ApplyOptions apply_options;
  bool remeasure = false;
  auto* diff = app.add_subcommand(
      "diff",
      "Show a run's state and compare its results with the registry: new, faster, slower, same, not comparable");
  diff->add_option("run_dir", run_dir, "Run folder")->required();
  diff->add_option("--registry", common.registry, "Registry root")->capture_default_str();

  auto* apply =
      app.add_subcommand("apply", "Write a finished run's approved results to the registry, atomically, with a backup");
  apply->add_option("run_dir", run_dir, "Run folder")->required();
  apply->add_option("--registry", common.registry, "Registry root")->capture_default_str();
  apply->add_option("--key", apply_options.keys, "Only these problem keys (default: every new or faster one)");
  apply->add_flag("--force", apply_options.force,
                  "Also replace entries with slower or not comparable (other --method) results");
  apply->add_flag("--accept-flagged", apply_options.accept_flagged,
                  "Also apply winners whose number is flagged: samples that did not reach the noise target, or a "
                  "re-measure more than 10 % off the search (the run's warnings name them)");
  apply->add_flag("--allow-unfinished", apply_options.allow_unfinished,
                  "Apply a run that did not finish (cancelled, failed, running): its results are partial");
  apply->add_flag("--dry-run", apply_options.dry_run, "Print what would be written; write nothing");
  apply->add_flag("--remeasure", remeasure,
                  "First time the registry's config and the run's side by side on the run's device (this machine's "
                  "device of the run's backend and index), in alternation, and class each key faster / slower / same "
                  "from that paired ratio instead of the recorded medians");

  std::string format, output;
  auto* exp = app.add_subcommand("export", "Export a run's trials (csv) or everything (json)");
  exp->add_option("run_dir", run_dir, "Run folder")->required();
  exp->add_option("--format", format, "csv | json")->required()->check(CLI::IsMember({"csv", "json"}));
  exp->add_option("-o,--output", output, "Output file (default stdout)");

  cli::LookupArgs lookup_args;
  CLI::App* lookup = cli::add_lookup_command(app, lookup_args);

  cli::ImportArgs import_args;
  CLI::App* import_cmd = cli::add_import_command(app, import_args);
  cli::MergeArgs merge_args;
  CLI::App* merge_cmd = cli::add_merge_command(app, merge_args);
  cli::RegistryArgs registry_args;
  const cli::RegistryCommands registry_cmd = cli::add_registry_command(app, registry_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInput;
  }

  try {
    const std::vector<std::string> args(argv, argv + argc);
    // Backends read their cache location when they are created.
    if (!ta.cache_dir.empty()) setenv("KTUNE_CUDA_CACHE", ta.cache_dir.c_str(), 1);
    auto backends = make_backends();
    if (*import_cmd) return cli::run_import(import_args);
    if (*merge_cmd) return cli::run_merge(merge_args, args);
    if (*registry_cmd.exp) return cli::run_registry_export(registry_args, backends);
    if (*registry_cmd.imp) return cli::run_registry_import(registry_args, backends);
    if (*lookup) return cli::run_lookup(lookup_args, backends);
    if (*devices) return cli::cmd_devices(backends, json);
    if (*kernels) return cli::cmd_kernels(backends, kernels_backend);
    if (*space)
      return cmd_space(find_backend(backends, common.backend), common, space_family, ta.kernel_spec, ta.space_file,
                       space_shapes, json);
    if (*worker) return cli::run_worker(find_backend(backends, serve_args.backend), serve_args);
    if (*tune) cli::check_tune_options(ta);
    if (*tune && !ta.replay.empty()) {
      if (!ta.family.empty() || !ta.shapes.empty() || !ta.space_file.empty() || !ta.kernel_spec.empty())
        throw InputError(
            "--replay takes the family, shapes and space from the recorded run; leave out the family, "
            "--shape, --space and --kernel-spec");
      if (ta.resume || ta.update_registry || !worker_args.devices.empty() || !ta.shard.empty())
        throw InputError(
            "--replay measures nothing new: --resume, --update-registry, --devices and --shard do not apply");
      cli::Replay r = cli::prepare_replay(ta.replay, backends, ta.strategy, args);
      if (tune->count("--remeasure-top")) r.request.measure.remeasure_top = ta.measure.remeasure_top;
      const std::string name = ta.run_name.empty() ? default_run_name("replay_" + r.request.family.name) : ta.run_name;
      if (!ta.no_save) r.request.run_dir = run_folder(ta.output_dir, name);
      return run_and_report(*r.backend, r.device, r.request, common, ta.quiet, nullptr);
    }
    if (*tune) {
      const cli::Given given = [&](const std::string& option) { return tune->count(option) > 0; };
      if (!worker_args.devices.empty()) {
        Backend* built_in = worker_args.command.empty() ? &find_backend(backends, common.backend) : nullptr;
        cli::DeviceWorkers dw = cli::start_device_workers(built_in, ta.kernel_spec, worker_args, given("--device"));
        if (dw.groups.empty())
          common.device = dw.single;  // one device: the run goes as with --device
        else
          return tune_on_devices(dw, common, ta, args, given, worker_args.command);
      }
      const auto resumed = run_to_resume(ta, given, common, ta.family, worker_args.command);
      const RunMetadata* resuming = resumed ? &*resumed : nullptr;
      // An external worker is the backend (a resumed worker run names the worker's backend, which
      // this build need not have); otherwise the built-in one, isolated or in process.
      Backend* in_process = worker_args.command.empty() ? &find_backend(backends, common.backend) : nullptr;
      if (const auto w = cli::tune_worker_backend(in_process, common.device, ta.kernel_spec, worker_args)) {
        if (resuming) cli::check_resumed_backend(*resuming, w->name(), worker_args.command);
        // The worker serves one device; the family may come from its hello alone.
        Common on_worker = common;
        on_worker.device = 0;
        if (ta.family.empty() && ta.kernel_spec.empty() && w->families().size() == 1)
          ta.family = w->families().front().name;
        return cmd_tune(*w, on_worker, ta, args, resuming, given);
      }
      return cmd_tune(*in_process, common, ta, args, resuming, given);
    }
    if (*diff) {
      const RunResults results = RunStore::read_results(run_dir);
      print_diff(results, diff_run(results, common.registry));
      return kExitOk;
    }
    if (*apply) {
      if (remeasure) apply_options.paired = judge(run_dir, RunStore::read_results(run_dir), common.registry, backends);
      return cmd_apply(run_dir, common.registry, apply_options);
    }
    if (*exp) {
      const std::string text = format == "csv" ? export_trials_csv(run_dir) : export_run_json(run_dir).dump(2) + "\n";
      if (output.empty()) {
        std::cout << text;
      } else {
        write_file_atomic(output, text);
        std::cerr << "wrote " << output << '\n';
      }
      return kExitOk;
    }
  } catch (const InputError& e) {
    std::cerr << "ktune: error: " << e.what() << '\n';
    return kExitInput;
  } catch (const std::exception& e) {
    std::cerr << "ktune: failed: " << e.what() << '\n';
    return kExitAttention;
  }
  return kExitOk;
}

// What did not reach stdout (a full disk, a closed file) is a failure, however the command went.
int main(int argc, char** argv) {
  const int rc = run_command(argc, argv);
  errno = 0;
  if (std::cout.flush() && std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  std::cerr << "ktune: error: cannot write to standard output"
            << (errno ? std::string(": ") + std::strerror(errno) : "") << '\n';
  return rc == kExitOk ? kExitAttention : rc;
}
