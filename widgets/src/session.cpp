#include "ktune/widgets/session.h"

#include <fstream>
#include <sstream>

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
      {"strategy", {{"kind", strategy.kind}, {"budget", strategy.budget}, {"seed", strategy.seed}}},
      {"measure",
       {{"method", ktune::to_string(measure.method)},
        {"noise_target", measure.noise_target},
        {"min_samples", measure.min_samples},
        {"max_samples", measure.max_samples},
        {"warmup_ms", measure.warmup_ms},
        {"min_sample_ms", measure.min_sample_ms},
        {"max_ms_per_config", measure.max_ms_per_config},
        {"slow_abort", measure.slow_abort},
        {"slow_abort_margin", measure.slow_abort_margin},
        {"rotate_buffers", measure.rotate_buffers}}},
      {"tolerance",
       {{"atol", tolerance.atol}, {"rtol", tolerance.rtol}, {"max_mismatch_fraction", tolerance.max_mismatch_fraction}}},
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
    if (j.contains("strategy")) {
      const json& st = j.at("strategy");
      s.strategy.kind = st.value("kind", s.strategy.kind);
      s.strategy.budget = st.value("budget", s.strategy.budget);
      s.strategy.seed = st.value("seed", s.strategy.seed);
    }
    if (j.contains("measure")) {
      const json& m = j.at("measure");
      MeasureSettings& ms = s.measure;
      ms.method = method_from_string(m.value("method", ktune::to_string(ms.method)));
      ms.noise_target = m.value("noise_target", ms.noise_target);
      ms.min_samples = m.value("min_samples", ms.min_samples);
      ms.max_samples = m.value("max_samples", ms.max_samples);
      ms.warmup_ms = m.value("warmup_ms", ms.warmup_ms);
      ms.min_sample_ms = m.value("min_sample_ms", ms.min_sample_ms);
      ms.max_ms_per_config = m.value("max_ms_per_config", ms.max_ms_per_config);
      ms.slow_abort = m.value("slow_abort", ms.slow_abort);
      ms.slow_abort_margin = m.value("slow_abort_margin", ms.slow_abort_margin);
      ms.rotate_buffers = m.value("rotate_buffers", ms.rotate_buffers);
    }
    if (j.contains("tolerance")) {
      const json& t = j.at("tolerance");
      s.tolerance.atol = t.value("atol", s.tolerance.atol);
      s.tolerance.rtol = t.value("rtol", s.tolerance.rtol);
      s.tolerance.max_mismatch_fraction = t.value("max_mismatch_fraction", s.tolerance.max_mismatch_fraction);
    }
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
