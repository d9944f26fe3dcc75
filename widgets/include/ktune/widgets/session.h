#pragma once
// Session: everything the Setup page holds, as saved to and loaded from a JSON file.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/measurement.h"
#include "ktune/problem.h"
#include "ktune/run_settings.h"
#include "ktune/run_store.h"
#include "ktune/search_space.h"
#include "ktune/strategy.h"

namespace ktune::gui {

// A run folder's record, as a session read from it keeps it.
struct RecordedRun {
  RunMetadata metadata;
  std::filesystem::path dir;
};

struct Session : RunSettings {
  std::string backend = "cpu";
  int device = 0;
  std::string family;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  // An external worker's command line (the "external worker" backend); empty for built-in ones.
  std::string worker;
  // The absolute folder the worker runs in when it is not the workbench's (a run's worker runs
  // where the run was made); empty: the workbench's. Saved with the session, and so recorded in
  // the runs it starts.
  std::string worker_directory;
  // Measure a built-in backend in a worker process; unset: the default (on for GPU backends).
  std::optional<bool> isolate;
  // The run this session was read from (from_run): the Setup page shows what the run recorded
  // where this build cannot make it again (a worker not connected yet, an imported cache's
  // family, a backend or device this machine lacks). Not saved with the session.
  std::shared_ptr<const RecordedRun> recorded;

  nlohmann::json to_json() const;
  static Session from_json(const nlohmann::json& j);       // throws InputError
  static Session load(const std::filesystem::path& file);  // throws InputError naming the file
  void save(const std::filesystem::path& file) const;      // atomic
  // The session a past run was started with, for resuming it or tuning again: its settings, and
  // the worker command and Isolate its command line or workbench session recorded.
  static Session from_run(const RunMetadata& metadata, const std::filesystem::path& run_dir);
};

}  // namespace ktune::gui
