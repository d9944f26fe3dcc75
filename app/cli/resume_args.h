#pragma once
// `ktune tune --resume`: the run's own settings (run_metadata.json) decide what is tuned and
// how. An option given on the command line must agree with the run; one that does not is an
// InputError naming the option and the run's value, and nothing is written.
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include "ktune/run_settings.h"
#include "ktune/run_store.h"

namespace ktune::cli {

// Whether the command line set an option ("--shape", "--budget", ...).
using Given = std::function<bool(const std::string& option)>;

// The run to resume. A folder without run_metadata.json (the run was stopped before it started)
// is an InputError saying to start it again without --resume.
RunMetadata read_run_to_resume(const std::filesystem::path& run_dir);

// Backend, device and family of the run, unless given; given ones must be the run's.
void take_run_target(const RunMetadata& run, const Given& given, std::string& backend, int& device,
                     std::string& family);

// Resuming the run in `run_dir` through the worker `command` ("" for none). A worker run resumed
// without --worker is an InputError that shows the recorded command to pass: ktune never starts a
// command it read from a run folder; the message names the folder the run was made in when it is
// not this one. A command other than the recorded one (its relative paths given absolute is the
// same) is a warning on `warn` naming both (the tuner still refuses another family or other
// settings; the worker's backend is checked against the run's once it has said hello:
// check_resumed_backend).
void check_resume_worker(const RunMetadata& run, const std::filesystem::path& run_dir, const std::string& command,
                         std::ostream& warn);

// The typed --worker command and --kernel-spec of a resume, against the folder the run was made in
// (RunMetadata::working_directory): a relative path in them that names nothing here but a file
// there is an InputError naming that folder (cd there or give an absolute path), before a worker
// starts and fails on it.
void check_resume_paths(const RunMetadata& run, const std::string& worker, const std::string& kernel_spec);

// A worker whose hello names another backend than the run's measures something else: InputError.
void check_resumed_backend(const RunMetadata& run, const std::string& worker_backend, const std::string& command);

// The run's settings; `asked` holds what the command line says: each given option must be valid
// (checked with the run's values of the others) and equal the run's.
RunSettings resume_settings(const RunMetadata& run, const RunSettings& asked, const Given& given);

}  // namespace ktune::cli
