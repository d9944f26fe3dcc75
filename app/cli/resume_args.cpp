#include "resume_args.h"

#include <map>

#include "ktune/error.h"

namespace ktune::cli {

namespace {

// The option that sets each settings field (differences() names the fields). Fields without
// an option (measure.min_sample_ms) always come from the run.
const std::map<std::string, std::string> kOptionOf = {
    {"problems", "--shape"},
    {"space", "--space"},
    {"strategy.kind", "--strategy"},
    {"strategy.budget", "--budget"},
    {"strategy.seed", "--seed"},
    {"strategy.time_budget_s", "--time-budget"},
    {"measure.remeasure_top", "--remeasure-top"},
    {"seed", "--seed"},
    {"measure.method", "--method"},
    {"measure.noise_target", "--noise-target"},
    {"measure.min_samples", "--min-samples"},
    {"measure.max_samples", "--max-samples"},
    {"measure.warmup_ms", "--warmup-ms"},
    {"measure.max_ms_per_config", "--max-ms-per-config"},
    {"measure.slow_abort", "--no-slow-abort"},
    {"measure.rotate_buffers", "--rotate-buffers"},
    {"tolerance.atol", "--atol"},
    {"tolerance.rtol", "--rtol"},
    {"tolerance.max_mismatch_fraction", "--max-mismatch"},
    {"shard", "--shard"},
};

[[noreturn]] void differs(const std::string& option, const std::string& run_value) {
  throw InputError(option + " differs from the run's: run has " + run_value + "; drop " + option +
                   " or start a new run (another --run-name)");
}

}  // namespace

RunMetadata read_run_to_resume(const std::filesystem::path& run_dir) {
  if (!std::filesystem::exists(run_dir / "run_metadata.json"))
    throw InputError(run_dir.string() + " holds no run to resume (no run_metadata.json: the run was stopped before it " +
                     "started, or never ran); start it again without --resume");
  return RunStore::read_metadata(run_dir);
}

void take_run_target(const RunMetadata& run, const Given& given, std::string& backend, int& device, std::string& family) {
  if (given("--backend") && backend != run.backend) differs("--backend", run.backend);
  if (given("--device") && device != run.device.index) differs("--device", std::to_string(run.device.index));
  if (given("family") && family != run.family) differs("the kernel family", run.family);
  backend = run.backend;
  device = run.device.index;
  family = run.family;
}

RunSettings resume_settings(const RunMetadata& run, const RunSettings& asked, const Given& given) {
  for (const auto& d : differences(run, asked)) {
    const auto option = kOptionOf.find(d.field);
    if (option == kOptionOf.end() || !given(option->second)) continue;
    differs(option->second, d.run_value);
  }
  if ((given("--tp-size") || given("--tp-split-dim")) && !given("--shape"))
    throw InputError("--tp-size and --tp-split-dim shape the problems: on --resume they come from the run; drop them");
  return run.settings();
}

}  // namespace ktune::cli
