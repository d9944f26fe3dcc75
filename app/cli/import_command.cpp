#include "import_command.h"

#include <algorithm>
#include <iostream>
#include <map>

#include "ktune/kernel_tuner_import.h"

namespace ktune::cli {

CLI::App* add_import_command(CLI::App& app, ImportArgs& a) {
  auto* import = app.add_subcommand("import", "Turn another tuner's recorded measurements into a ktune run folder");
  import->require_subcommand(1);
  auto* kt = import->add_subcommand(
      "kernel-tuner",
      "A Kernel Tuner cache file (tune_kernel(..., cache=\"FILE\")), finished or still being written: its configs "
      "become trials (InvalidConfig -> pruned, CompilationFailedConfig -> compile_error, RuntimeFailedConfig -> "
      "launch_error), its times samples, its other numbers (GFLOP/s, energy, power) trial metrics");
  kt->add_option("cache_file", a.cache_file, "Kernel Tuner cache JSON file")->required()->check(CLI::ExistingFile);
  kt->add_option("--run-name", a.run_name, "Run folder name under --output-dir (default <family>_<date>_<time>)");
  kt->add_option("--output-dir", a.output_dir, "Where runs are saved")->capture_default_str();
  kt->add_option("--family", a.family, "Kernel family name of the run (default: the cache's kernel_name)");
  kt->add_option("--backend,-b", a.backend, "Platform the cache was measured on (the file does not say)")
      ->capture_default_str();
  return import;
}

int run_import(const ImportArgs& a) {
  KernelTunerCache cache = read_kernel_tuner_cache(a.cache_file, a.family, a.backend);
  const auto dir = run_folder(a.output_dir, a.run_name.empty() ? default_run_name(cache.metadata.family) : a.run_name);
  std::map<std::string, int> counts;
  for (const auto& t : cache.trials) ++counts[to_string(t.status)];
  const std::string device = cache.metadata.device.name;
  const std::size_t n = cache.trials.size();
  const std::vector<std::string> skipped = cache.skipped;
  write_imported_run(dir, std::move(cache));
  std::cout << "imported " << n << " configs of " << a.cache_file << " (" << device << "):";
  for (const auto& [status, k] : counts) std::cout << ' ' << k << ' ' << status;
  if (!skipped.empty()) {
    std::cout << "\nskipped " << skipped.size() << " entr" << (skipped.size() == 1 ? "y" : "ies")
              << " whose time is not positive and finite (no measurement to rank):";
    const std::size_t shown = std::min<std::size_t>(skipped.size(), 3);
    for (std::size_t i = 0; i < shown; ++i) std::cout << (i ? "; " : " ") << skipped[i];
    if (shown < skipped.size()) std::cout << "; ...";
  }
  std::cout << "\nrun saved in " << dir.string() << "; see it with: ktune export " << dir.string()
            << " --format csv, or replay it with: ktune tune --replay " << dir.string() << " --strategy random\n";
  return 0;
}

}  // namespace ktune::cli
