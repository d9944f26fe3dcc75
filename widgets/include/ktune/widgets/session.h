#pragma once
// Session: everything the Setup page holds, as saved to and loaded from a JSON file.
#include <filesystem>
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

struct Session : RunSettings {
  std::string backend = "cpu";
  int device = 0;
  std::string family;
  std::string run_name;
  std::string output_dir = "tuning_runs";
  // An external worker's command line (the "external worker" backend); empty for built-in ones.
  std::string worker;
  // Measure a built-in backend in a worker process; unset: the default (on for GPU backends).
  std::optional<bool> isolate;

  nlohmann::json to_json() const;
  static Session from_json(const nlohmann::json& j);       // throws InputError
  static Session load(const std::filesystem::path& file);  // throws InputError naming the file
  void save(const std::filesystem::path& file) const;      // atomic
  // The session a past run was started with, for resuming it or tuning again (a run the
  // workbench started keeps its whole session, worker command included, in its arguments).
  static Session from_run(const RunMetadata& metadata, const std::filesystem::path& run_dir);
};

}  // namespace ktune::gui
