#include "ktune/widgets/session.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune::gui {

using nlohmann::json;

json Session::to_json() const {
  json problems_json = json::array();
  for (const Problem& p : problems) problems_json.push_back(p.to_json());
  return json{
      {"backend", backend},
      {"device", device},
      {"family", family},
      {"problems", problems_json},
      {"space", space.to_json()},
      {"strategy", ktune::to_json(strategy)},
      {"measure", ktune::to_json(measure)},
      {"tolerance", ktune::to_json(tolerance)},
      {"seed", seed},
      {"run_name", run_name},
      {"output_dir", output_dir},
  };
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
  } catch (const json::exception& e) {
    throw InputError(std::string("malformed session: ") + e.what());
  }
  return s;
}

Session Session::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError("cannot read session file " + file.string() + ": check the path and its permissions");
  try {
    return from_json(json::parse(in));
  } catch (const json::parse_error& e) {
    throw InputError("session file " + file.string() + " is not valid JSON: " + e.what());
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
  s.problems = m.problems;
  s.space = m.space;
  s.strategy = m.strategy;
  s.measure = m.measure;
  s.tolerance = m.tolerance;
  s.seed = m.seed;
  s.run_name = m.run_name;
  s.output_dir = run_dir.parent_path().string();
  return s;
}

}  // namespace ktune::gui
