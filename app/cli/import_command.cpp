#include "import_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "ktune/kernel_tuner_import.h"

namespace ktune::cli {

CLI::App* add_import_command(CLI::App& app, ImportArgs& a) {
  auto* import = app.add_subcommand("import", "Turn another tuner's recorded measurements into a ktune run folder");
  import->require_subcommand(1);
  auto* kt = import->add_subcommand(
      "kernel-tuner",
      "A Kernel Tuner cache file (tune_kernel(..., cache=\"FILE\")), finished or still being written, plain or "
      "gzip-compressed (.json.gz): its configs become trials (InvalidConfig -> pruned, CompilationFailedConfig -> "
      "compile_error, RuntimeFailedConfig -> launch_error), its times samples, its other numbers (GFLOP/s, energy, "
      "power) trial metrics. The file does not hold the kernel's restrictions: give them (--constraint, --space) "
      "and the run's space is the one Kernel Tuner searched; without them it is the product of tune_params. The "
      "import says how much of that space the cache covers. A replay (ktune tune --replay) searches the recorded "
      "configs either way. See docs/kernel-tuner-caches.md");
  kt->add_option("cache_file", a.cache_file, "Kernel Tuner cache file (.json, or .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  kt->add_option("--constraint", a.constraints,
                 "A restriction of the kernel, as a ktune constraint over the tune_params and the problem's fields x, "
                 "y, z (Kernel Tuner's restrictions=[\"block_size_x*block_size_y>=32\"]; Python's and/or/not are "
                 "&&/||/!, % is mod(a, b)); repeat for each")
      ->take_all();
  kt->add_option("--space", a.space_file,
                 "A search space file (as for ktune tune --space) with the cache's parameters, their candidate values "
                 "as tuned and \"constraints\"; --constraint adds to them")
      ->check(CLI::ExistingFile);
  kt->add_option("--run-name", a.run_name, "Run folder name under --output-dir (default <family>_<date>_<time>)");
  kt->add_option("--output-dir", a.output_dir, "Where runs are saved")->capture_default_str();
  kt->add_option("--family", a.family, "Kernel family name of the run (default: the cache's kernel_name)");
  kt->add_option("--backend,-b", a.backend, "Platform the cache was measured on (the file does not say)")
      ->capture_default_str();
  return import;
}

namespace {

std::string percent(std::uint64_t part, std::uint64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

// Up to three entries of `list`, then "; ...".
std::string first_few(const std::vector<std::string>& list) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(list.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? "; " : " ") + list[i];
  return out + (shown < list.size() ? "; ..." : "");
}

// How much of the run's space the cache covers, and what it holds outside it.
void print_coverage(const CacheCoverage& c, std::size_t recorded, bool restricted) {
  std::cout << "\nspace: " << c.space_total << " configs";
  if (!restricted)
    std::cout << " (the product of tune_params: the file holds no restrictions; give them with --constraint or "
                 "--space)";
  else if (c.space_valid)
    std::cout << ", " << *c.space_valid << " under the restrictions";
  else
    std::cout << " before the restrictions (too many to count the valid ones)";
  std::cout << "; the cache covers " << c.in_space;
  if (c.space_valid) std::cout << " of them (" << percent(c.in_space, *c.space_valid) << ")";
  std::cout << "; a replay searches the " << c.in_space << " recorded configs the space holds";
  if (!c.violating.empty())
    std::cout << "\n"
              << c.violating.size() << " of the " << recorded
              << " recorded configs violate the restrictions, yet Kernel Tuner ran them (were these its "
                 "restrictions?); they stay in the run, but are not the best and a replay leaves them out:"
              << first_few(c.violating);
  if (!c.invalid_outside.empty())
    std::cout << "\n"
              << c.invalid_outside.size()
              << " InvalidConfig entries fall outside the restrictions, as Kernel Tuner records such configs";
}

}  // namespace

int run_import(const ImportArgs& a) {
  KernelTunerRestrictions restrictions;
  for (const auto& expr : a.constraints) restrictions.constraints.push_back({expr, ""});
  if (!a.space_file.empty()) restrictions.space = SearchSpace::load(a.space_file);
  const bool restricted = !restrictions.empty();
  KernelTunerCache cache = read_kernel_tuner_cache(a.cache_file, a.family, a.backend, restrictions);
  const auto dir = run_folder(a.output_dir, a.run_name.empty() ? default_run_name(cache.metadata.family) : a.run_name);
  std::map<std::string, int> counts;
  for (const auto& t : cache.trials) ++counts[to_string(t.status)];
  const std::string device = cache.metadata.device.name;
  const std::size_t n = cache.trials.size();
  const std::vector<std::string> skipped = cache.skipped;
  const CacheCoverage coverage = cache.coverage;
  write_imported_run(dir, std::move(cache));
  std::cout << "imported " << n << " configs of " << a.cache_file << " (" << device << "):";
  for (const auto& [status, k] : counts) std::cout << ' ' << k << ' ' << status;
  if (!skipped.empty()) {
    std::cout << "\nskipped " << skipped.size() << " entr" << (skipped.size() == 1 ? "y" : "ies")
              << " whose time is not positive and finite (no measurement to rank):" << first_few(skipped);
  }
  print_coverage(coverage, n, restricted);
  std::cout << "\nrun saved in " << dir.string() << "; see it with: ktune export " << dir.string()
            << " --format csv, or replay it with: ktune tune --replay " << dir.string() << " --strategy random\n";
  return 0;
}

}  // namespace ktune::cli
