#include "ktune/widgets/session.h"

#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/recorded_setup.h"

namespace ktune::gui {

using nlohmann::json;

json Session::to_json() const {
  json j = RunSettings::to_json();
  j.update({{"backend", backend},
            {"device", device},
            {"family", family},
            {"run_name", run_name},
            {"output_dir", output_dir}});
  if (!worker.empty()) j["worker"] = worker;
  if (!worker_directory.empty()) j["worker_directory"] = worker_directory;
  if (isolate) j["isolate"] = *isolate;
  return j;
}

Session Session::from_json(const json& j) {
  Session s;
  try {
    if (!j.is_object()) throw InputError("a session is a JSON object");
    s.backend = j.value("backend", s.backend);
    s.device = j.value("device", s.device);
    s.family = j.at("family").get<std::string>();
    for (const json& p : j.value("problems", json::array())) s.problems.push_back(Problem::from_json(p));
    if (j.contains("space")) s.space = SearchSpace::from_json(j.at("space"));
    // The core's spellings, shared with run metadata: missing keys keep the defaults.
    if (j.contains("strategy")) s.strategy = strategy_spec_from_json(j.at("strategy"), s.strategy);
    if (j.contains("measure")) s.measure = measure_settings_from_json(j.at("measure"), s.measure);
    if (j.contains("tolerance")) s.tolerance = tolerance_from_json(j.at("tolerance"), s.tolerance);
    s.seed = j.value("seed", s.seed);
    s.run_name = j.value("run_name", s.run_name);
    s.output_dir = j.value("output_dir", s.output_dir);
    s.worker = j.value("worker", s.worker);
    s.worker_directory = j.value("worker_directory", s.worker_directory);
    if (j.contains("isolate")) s.isolate = j.at("isolate").get<bool>();
  } catch (const json::exception& e) {
    throw InputError(std::string("malformed session: ") + e.what());
  }
  return s;
}

Session Session::load(const std::filesystem::path& file) {
  const json j = read_json_file(file, "session file");
  try {
    return from_json(j);
  } catch (const InputError& e) {
    throw InputError("session file " + file.string() + ": " + e.what());
  }
}

void Session::save(const std::filesystem::path& file) const { write_file_atomic(file, to_json().dump(2) + "\n"); }

Session Session::from_run(const RunMetadata& m, const std::filesystem::path& run_dir) {
  Session s;
  s.backend = m.backend;
  s.device = m.device.index;
  s.family = m.family;
  s.settings() = m.settings();
  s.run_name = m.run_name;
  s.output_dir = run_dir.parent_path().string();
  const RecordedSetup setup = recorded_setup(m, {});
  s.worker = setup.worker;
  s.worker_directory = setup.worker_folder;
  s.isolate = setup.isolate;
  s.recorded = std::make_shared<const RecordedRun>(RecordedRun{m, run_dir});
  return s;
}

}  // namespace ktune::gui
