#include "resume_args.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "ktune/error.h"
#include "ktune/recorded_setup.h"
#include "ktune/run_options.h"

namespace ktune::cli {

namespace {

// The option that sets each settings field (differences() names the fields): the flags of the
// core's option tables, and those of the fields outside them.
std::map<std::string, std::string> option_of_field() {
  std::map<std::string, std::string> out = {
      {"problems", "--shape"}, {"space", "--space"}, {"seed", "--seed"}, {"shard", "--shard"}};
  for_each_section([&](const char* section, auto options, auto) {
    for (const auto& o : options) out[std::string(section) + "." + o.key] = o.flag;
  });
  return out;
}

// `asked` with the run's value of every option not given, so that the checks across options
// (--max-samples against --min-samples) see the settings the resumed run will use.
RunSettings with_run_values(const RunSettings& run, RunSettings asked, const Given& given) {
  for_each_section([&](const char*, auto options, auto section) {
    for (const auto& o : options)
      if (!given(o.flag)) std::visit([&](auto member) { (asked.*section).*member = (run.*section).*member; }, o.member);
  });
  return asked;
}

// `s` as one word for /bin/sh: as it is when it holds nothing the shell reads, else in single quotes.
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("@%_+=:,./-", c) != nullptr;
  });
  if (plain) return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

[[noreturn]] void differs(const std::string& option, const std::string& run_value) {
  throw InputError(option + " differs from the run's: run has " + run_value + "; drop " + option +
                   " or start a new run (another --run-name)");
}

}  // namespace

RunMetadata read_run_to_resume(const std::filesystem::path& run_dir) {
  if (!std::filesystem::exists(run_dir / "run_metadata.json"))
    throw InputError(run_dir.string() +
                     " holds no run to resume (no run_metadata.json: the run was stopped before it " +
                     "started, or never ran); start it again without --resume");
  return RunStore::read_metadata(run_dir);
}

void take_run_target(const RunMetadata& run, const Given& given, std::string& backend, int& device,
                     std::string& family) {
  if (given("--backend") && backend != run.backend) differs("--backend", run.backend);
  if (given("--device") && device != run.device.index) differs("--device", std::to_string(run.device.index));
  if (given("family") && family != run.family) differs("the kernel family", run.family);
  backend = run.backend;
  device = run.device.index;
  family = run.family;
}

void check_resume_worker(const RunMetadata& run, const std::filesystem::path& run_dir, const std::string& command,
                         std::ostream& warn) {
  const std::string recorded = recorded_worker(run);
  if (command == recorded) return;
  if (command.empty())
    throw InputError("run " + run_dir.string() + " was measured by the worker `" + recorded + "` (backend '" +
                     run.backend +
                     "'), and ktune starts no command it reads from a run folder. Check that command, then resume "
                     "with it: --worker " +
                     shell_word(recorded));
  warn << "ktune: warning: run " << run_dir.string() << " was measured "
       << (recorded.empty() ? "in process by the " + run.backend + " backend" : "by the worker `" + recorded + "`")
       << "; resuming it with `" << command
       << "`: the trials measured before and after compare only if both commands measure the same kernels the "
          "same way\n";
}

void check_resumed_backend(const RunMetadata& run, const std::string& worker_backend, const std::string& command) {
  if (worker_backend == run.backend) return;
  throw InputError("the worker `" + (command.empty() ? std::string("ktune worker") : command) + "` serves backend '" +
                   worker_backend + "', but the run was measured on '" + run.backend +
                   "': its times would not compare; resume with the run's worker (--worker " +
                   shell_word(recorded_worker(run).empty() ? std::string("...") : recorded_worker(run)) +
                   ") or start a new run (another --run-name)");
}

RunSettings resume_settings(const RunMetadata& run, const RunSettings& asked, const Given& given) {
  const RunSettings checked = with_run_values(run, asked, given);
  validate(checked, OptionNames::Cli);
  const auto option_of = option_of_field();
  for (const auto& d : differences(run, checked)) {
    const auto option = option_of.find(d.field);
    if (option == option_of.end() || !given(option->second)) continue;
    differs(option->second, d.run_value);
  }
  if ((given("--tp-size") || given("--tp-split-dim")) && !given("--shape"))
    throw InputError("--tp-size and --tp-split-dim shape the problems: on --resume they come from the run; drop them");
  return run.settings();
}

}  // namespace ktune::cli
