#include "resume_args.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "ktune/error.h"
#include "ktune/recorded_setup.h"
#include "ktune/run_options.h"

namespace ktune::cli {

namespace {

// The option that sets each settings field (differences() names the fields): the flags of the
// core's option tables, and those of the fields outside them.
std::map<std::string, std::string> option_of_field() {
  std::map<std::string, std::string> out = {
      {"problems", "--shape"}, {"space", "--space"}, {"seed", workload_seed_option().flag}, {"shard", "--shard"}};
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

// " (the run was made in /x: ...)" when the worker's recorded folder is not the one ktune runs in:
// relative paths in its command name files there.
std::string made_elsewhere(const RunMetadata& run) {
  namespace fs = std::filesystem;
  const std::string folder = recorded_worker_folder(run);
  std::error_code ec;
  if (folder.empty() || fs::equivalent(folder, fs::current_path(ec), ec)) return {};
  if (!fs::is_directory(folder, ec))
    return " (the run was made in " + folder + ", which no longer exists: give the command's paths absolute)";
  return " (the run was made in " + folder + ": cd there or give its paths absolute)";
}

// The words of a command as /bin/sh splits it (quotes and backslashes; no expansions), for
// finding the paths in it.
std::vector<std::string> shell_words(const std::string& command) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (quote == '"' && c == '\\' && i + 1 < command.size())
        word += command[++i];
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c, in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i], in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.push_back(std::move(word));
      word.clear(), in_word = false;
    } else {
      word += c, in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

// A relative path in `command` (a word, or an option's value after '=') that names nothing here
// but a file under `folder`: the command was written for that folder.
std::optional<std::string> path_only_under(const std::string& folder, const std::string& command) {
  namespace fs = std::filesystem;
  for (std::string word : shell_words(command)) {
    if (const auto eq = word.find('='); word.starts_with("-") && eq != std::string::npos) word = word.substr(eq + 1);
    // Program names (python3) are found on PATH, not in the folder: only what reads as a path.
    if (word.empty() || word.starts_with("-") || fs::path(word).is_absolute() ||
        word.find_first_of("/.") == std::string::npos)
      continue;
    std::error_code ec;
    if (!fs::exists(word, ec) && fs::exists(fs::path(folder) / word, ec)) return word;
  }
  return std::nullopt;
}

// The words of `command` with each relative path that names a file under `folder` made absolute.
std::vector<std::string> resolved_words(const std::string& command, const std::filesystem::path& folder) {
  std::vector<std::string> out = shell_words(command);
  for (std::string& word : out) {
    std::error_code ec;
    if (!word.starts_with("-") && std::filesystem::path(word).is_relative() &&
        std::filesystem::exists(folder / word, ec))
      word = (folder / word).lexically_normal().string();
  }
  return out;
}

// The recorded command and the typed one start the same files: the typed one gives the recorded
// one's relative paths absolute, or is typed in another folder with paths that lead to the same.
bool same_command(const RunMetadata& run, const std::string& recorded, const std::string& typed) {
  const std::string folder = recorded_worker_folder(run);
  std::error_code ec;
  return !folder.empty() && !recorded.empty() &&
         resolved_words(recorded, folder) == resolved_words(typed, std::filesystem::current_path(ec));
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

void check_resume_paths(const RunMetadata& run, const std::string& worker, const std::string& kernel_spec) {
  const RecordedSetup setup = recorded_setup(run, {});
  std::error_code ec;
  const std::string here = std::filesystem::current_path(ec).string();
  const auto refuse = [&](const std::string& what, const std::string& path, const std::string& made) {
    throw InputError("`" + path + "` " + what + " is not in " + here + " (where ktune runs) but in " + made +
                     ", where the run was made: cd there or give an absolute path (" +
                     (std::filesystem::path(made) / path).lexically_normal().string() + ")");
  };
  if (!setup.worker_folder.empty())
    if (const auto path = path_only_under(setup.worker_folder, worker))
      refuse("in the worker command", *path, setup.worker_folder);
  if (!setup.folder.empty() && !kernel_spec.empty())
    if (const auto path = path_only_under(setup.folder, kernel_spec)) refuse("of --kernel-spec", *path, setup.folder);
}

void check_resume_worker(const RunMetadata& run, const std::filesystem::path& run_dir, const std::string& command,
                         std::ostream& warn) {
  const std::string recorded = recorded_worker(run);
  if (command == recorded || same_command(run, recorded, command)) return;
  if (command.empty())
    throw InputError("run " + run_dir.string() + " was measured by the worker `" + recorded + "` (backend '" +
                     run.backend +
                     "'), and ktune starts no command it reads from a run folder. Check that command, then resume "
                     "with it: --worker " +
                     shell_word(recorded) + made_elsewhere(run));
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
                   shell_word(recorded_worker(run).empty() ? std::string("...") : recorded_worker(run)) + ")" +
                   made_elsewhere(run) + " or start a new run (another --run-name)");
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
