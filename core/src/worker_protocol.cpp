#include "ktune/worker_protocol.h"

#include <algorithm>
#include <cmath>

#include "family_sharding.h"
#include "json_path.h"
#include "ktune/error.h"
#include "ktune/version.h"
#include "ktune/workload_rules.h"

namespace ktune::worker {

namespace {

using json = nlohmann::json;

// JSON from another process may nest arbitrarily: a protocol message never needs more than this.
constexpr int kMaxDepth = 32;

// The message's own words about what is wrong, without dumping whole values into messages.
std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

// "what: " naming the object `m` in an error; nothing when `what` is empty (the caller names it).
std::string prefix(const std::string& what) { return what.empty() ? what : what + ": "; }
// `key` below `what`, as a path.
std::string below(const std::string& what, const std::string& key) { return what.empty() ? key : what + "." + key; }

template <typename T>
T field(const json& m, const char* key, const std::string& what) {
  const auto it = m.find(key);
  if (it == m.end()) throw ProtocolError(prefix(what) + "missing \"" + key + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw ProtocolError(prefix(what) + "\"" + key + "\" has the wrong type (" + brief(*it) + ")");
  }
}

// A number of measured.validation, 0 when absent. null is how JSON writers (nlohmann's, so
// `ktune worker`'s) spell a non-finite number: an output that held NaN or infinity.
double validation_number(const json& validation, const char* key) {
  const auto it = validation.find(key);
  if (it == validation.end()) return 0;
  if (it->is_null()) return INFINITY;
  if (!it->is_number())
    throw ProtocolError(std::string("measured.validation: \"") + key + "\" is not a number (" + brief(*it) + ")");
  return it->get<double>();
}

// measured.metrics: names and finite numbers. "device" is ktune's own (the device index under
// --devices), which a worker's number would be overwritten by.
std::map<std::string, double> read_metrics(const json& metrics) {
  if (!metrics.is_object())
    throw ProtocolError("measured.metrics: not an object of names and numbers (" + brief(metrics) + ")");
  std::map<std::string, double> out;
  for (const auto& [name, v] : metrics.items()) {
    if (name.empty()) throw ProtocolError("measured.metrics: a metric needs a name");
    if (name == "device")
      throw ProtocolError(
          "measured.metrics.device: the name is ktune's (which device measured a trial); name it otherwise");
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw ProtocolError("measured.metrics." + name + ": not a finite number (" + brief(v) + ")");
    out[name] = v.get<double>();
  }
  return out;
}

// sampled.conditions: the device's while the sample ran (ktune/conditions.h), by their names only.
Conditions read_conditions(const json& c) {
  if (!c.is_object()) throw ProtocolError("sampled.conditions: not an object of names and numbers (" + brief(c) + ")");
  Conditions out;
  for (const auto& [name, v] : c.items()) {
    if (!is_condition(name))
      throw ProtocolError("sampled.conditions." + name + ": not a condition ktune reads (" + kSmClockMhz + ", " +
                          kPowerW + ", " + kClockLimited + ")");
    const double x = v.is_number() ? v.get<double>() : -1;
    if (!std::isfinite(x) || x < 0 || (name == kClockLimited && x > 1))
      throw ProtocolError("sampled.conditions." + name + ": not a " +
                          (name == kClockLimited ? "share from 0 to 1" : "non-negative number") + " (" + brief(v) +
                          ")");
    out[name] = x;
  }
  return out;
}

}  // namespace

json parse_line(const std::string& line) {
  json m;
  try {
    // A depth-limited parse: the callback refuses values nested past kMaxDepth.
    m = json::parse(line, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw ProtocolError("message nested deeper than " + std::to_string(kMaxDepth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    throw ProtocolError("not a JSON line: " + std::string(e.what()));
  }
  if (!m.is_object()) throw ProtocolError("a message must be a JSON object, got " + brief(m));
  if (!m.contains("type") || !m.at("type").is_string())
    throw ProtocolError("a message needs a string \"type\": " + brief(m));
  return m;
}

std::string to_line(const json& message) { return message.dump() + "\n"; }

json client_hello() { return {{"type", "hello"}, {"protocol", kProtocolVersion}, {"ktune", version()}}; }

void check_client_hello(const json& m) {
  if (m.value("type", "") != "hello")
    throw ProtocolError("the first message must be ktune's hello, got '" + m.value("type", "") + "'");
  const auto v = field<int>(m, "protocol", "hello");
  if (v != kProtocolVersion)
    throw ProtocolError("ktune speaks worker protocol " + std::to_string(v) + ", this worker speaks " +
                        std::to_string(kProtocolVersion) + "; use a ktune and a worker of the same protocol version");
}

json family_to_json(const KernelFamily& f) {
  json fields = json::array();
  for (const auto& k : f.key_fields)
    fields.push_back({{"name", k.name},
                      {"numeric", k.numeric},
                      {"default", k.default_value},
                      {"choices", k.choices},
                      {"help", k.help}});
  const json space = f.default_space.to_json();
  json out = {{"name", f.name},        {"description", f.description},
              {"key_fields", fields},  {"bucket_field", f.bucket_field},
              {"flops", f.flops_expr}, {"bytes", f.bytes_expr},
              {"space", space},        {"default_config", f.default_config.to_json()},
              {"source", f.source}};
  detail::write_sharding(f, out);
  // A spec family's derived launch limits travel with it, so that an isolated run (whose family
  // comes from its measuring child) still adds them to a --space file (KernelFamily::user_space).
  if (!f.launch_limits.empty()) out["launch_limits"] = constraints_to_json(f.launch_limits);
  // So that a run through `ktune worker` (or a Python worker on ktune's routing) is held to the
  // rules its inputs follow, as an in-process run is; left out where it is 1, as older hellos do.
  if (f.workload_rules_since > 1) out["workload_rules_since"] = f.workload_rules_since;
  return out;
}

OfferedFamily family_from_json(const json& j, const std::string& backend, const std::string& where) {
  if (!j.is_object()) throw ProtocolError(prefix(where) + "each family is an object, got " + brief(j));
  OfferedFamily out;
  KernelFamily& f = out.family;
  f.name = field<std::string>(j, "name", where);
  const std::string what = where.empty() ? "" : below(where, f.name);
  f.backend = backend;
  f.description = j.value("description", "");
  f.bucket_field = j.value("bucket_field", "");
  f.flops_expr = j.value("flops", "0");
  f.bytes_expr = j.value("bytes", "0");
  f.source = j.value("source", "worker");
  for (const auto& k : field<json>(j, "key_fields", what)) {
    KeyField kf;
    kf.name = field<std::string>(k, "name", below(what, "key_fields"));
    kf.numeric = k.value("numeric", true);
    kf.default_value = k.value("default", "");
    kf.choices = k.value("choices", std::vector<std::string>{});
    kf.help = k.value("help", "");
    f.key_fields.push_back(std::move(kf));
  }
  try {
    detail::read_sharding(detail::JsonPath(j, what), f);
  } catch (const InputError& e) {
    throw ProtocolError(e.what());
  }
  const auto space = j.find("space");
  out.has_space = space != j.end() && !space->is_null();
  if (out.has_space) {
    if (!space->is_object() || !space->contains("parameters"))
      throw ProtocolError(below(what, "space") + ": expected {\"parameters\": [{\"name\", \"values\"}, ...]}");
    try {
      f.default_space = SearchSpace::from_json(*space);
    } catch (const std::exception& e) {
      throw ProtocolError(below(what, "space") + ": " + e.what());
    }
  }
  if (j.contains("default_config")) f.default_config = config_from_wire(j.at("default_config"));
  if (const auto limits = j.find("launch_limits"); limits != j.end()) {
    if (!limits->is_array())
      throw ProtocolError(below(what, "launch_limits") + ": expected an array of constraints, got " + brief(*limits));
    try {
      f.launch_limits = constraints_from_json(*limits);
    } catch (const InputError& e) {
      throw ProtocolError(below(what, "launch_limits") + ": " + e.what());
    }
  }
  if (const auto rules = j.find("workload_rules_since"); rules != j.end()) {
    if (!rules->is_number_integer() || *rules < 1 || *rules > kWorkloadRules)
      throw ProtocolError(below(what, "workload_rules_since") + ": " + brief(*rules) +
                          " is not a version of the workload rules this ktune knows (1 to " +
                          std::to_string(kWorkloadRules) + "); a worker newer than ktune needs a newer ktune");
    f.workload_rules_since = rules->get<int>();
  }
  return out;
}

Config config_from_wire(const json& j) {
  try {
    return Config::from_json(j);
  } catch (const InputError& e) {
    throw ProtocolError(e.what());
  }
}

json to_json(const Hello& h) {
  json devices = json::array(), families = json::array(), versions = json::object();
  for (const auto& d : h.devices) {
    json dj = d.to_json();
    dj.erase("slug");  // ktune derives it from the name: sent, it would look like something a worker sets
    devices.push_back(std::move(dj));
  }
  for (const auto& f : h.families) {
    json fj = family_to_json(f.family);
    if (!f.has_space) fj["space"] = nullptr;
    families.push_back(std::move(fj));
  }
  for (const auto& [k, v] : h.versions) versions[k] = v;
  return {{"type", "hello"},      {"protocol", h.protocol},
          {"worker", h.worker},   {"backend", h.backend},
          {"devices", devices},   {"device_count", std::max(h.device_count, h.devices.size())},
          {"families", families}, {"versions", versions}};
}

Hello hello_from_json(const json& m) {
  if (m.value("type", "") == "error") throw ProtocolError("the worker refused: " + m.value("message", ""));
  if (m.value("type", "") != "hello")
    throw ProtocolError("the worker's first message must be hello, got '" + m.value("type", "") + "'");
  Hello h;
  h.protocol = field<int>(m, "protocol", "hello");
  if (h.protocol != kProtocolVersion)
    throw ProtocolError("the worker speaks protocol " + std::to_string(h.protocol) + ", this ktune speaks " +
                        std::to_string(kProtocolVersion) + "; use a worker and a ktune of the same protocol version");
  h.worker = m.value("worker", "");
  h.backend = field<std::string>(m, "backend", "hello");
  if (h.backend.empty()) throw ProtocolError("hello.backend is empty");
  for (const auto& d : field<json>(m, "devices", "hello")) {
    try {
      h.devices.push_back(DeviceInfo::from_json(d));
    } catch (const std::exception& e) {
      throw ProtocolError(std::string("hello.devices: ") + e.what());
    }
  }
  if (h.devices.empty()) throw ProtocolError("hello.devices is empty: a worker measures on at least one device");
  h.device_count = h.devices.size();
  if (m.contains("device_count")) {
    const auto& n = m.at("device_count");
    if (!n.is_number_unsigned() || n.get<std::size_t>() < h.devices.size())
      throw ProtocolError("hello.device_count must be a whole number, at least the number of devices listed");
    h.device_count = n.get<std::size_t>();
  }
  for (const auto& f : field<json>(m, "families", "hello")) h.families.push_back(family_from_json(f, h.backend));
  if (m.contains("versions") && m.at("versions").is_object())
    for (const auto& [k, v] : m.at("versions").items())
      h.versions.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  return h;
}

json to_json(const Request& r) {
  json m{{"type", r.type}, {"id", r.id}};
  if (r.type == "shutdown") return m;
  m["family"] = r.family;
  m["problem"] = r.problem.to_json();
  m["config"] = r.config.to_json();
  m["seed"] = r.seed;
  if (r.baseline) m["baseline"] = true;
  if (r.type == "sample") {
    m["launches"] = r.launches;
    m["method"] = to_string(r.settings.method);
    m["rotate_buffers"] = r.settings.rotate_buffers;
    m["timeout_ms"] = r.timeout_ms;
  }
  if (r.type == "measure") {
    m["tolerance"] = to_json(r.tolerance);
    m["settings"] = to_json(r.settings);
    m["best_median_ns"] = r.best_median_ns ? json(*r.best_median_ns) : json(nullptr);
    m["validate_only"] = r.validate_only;
  }
  return m;
}

Request request_from_json(const json& m) {
  Request r;
  r.type = field<std::string>(m, "type", "request");
  r.id = field<std::int64_t>(m, "id", r.type);
  if (r.type == "shutdown") return r;
  if (r.type != "prepare" && r.type != "measure" && r.type != "sample")
    throw ProtocolError("unknown message type '" + r.type + "'; protocol " + std::to_string(kProtocolVersion) +
                        " has hello, prepare, measure, sample and shutdown");
  r.family = field<std::string>(m, "family", r.type);
  try {
    r.problem = Problem::from_json(field<json>(m, "problem", r.type));
  } catch (const InputError& e) {
    throw ProtocolError(r.type + ".problem: " + e.what());
  }
  r.config = config_from_wire(field<json>(m, "config", r.type));
  r.seed = m.value("seed", std::uint64_t{0});
  r.baseline = m.value("baseline", false);
  if (r.type == "sample") {
    r.launches = std::max(1, field<int>(m, "launches", "sample"));
    try {
      r.settings.method = method_from_string(m.value("method", "amortized"));
    } catch (const InputError& e) {
      throw ProtocolError(std::string("sample.method: ") + e.what());
    }
    r.settings.rotate_buffers = m.value("rotate_buffers", false);
    r.timeout_ms = m.value("timeout_ms", 0.0);
  }
  if (r.type == "measure") {
    try {
      if (m.contains("tolerance")) r.tolerance = tolerance_from_json(m.at("tolerance"));
      if (m.contains("settings")) r.settings = measure_settings_from_json(m.at("settings"));
    } catch (const InputError& e) {
      throw ProtocolError(std::string("measure: ") + e.what());
    }
    if (m.contains("best_median_ns") && m.at("best_median_ns").is_number())
      r.best_median_ns = m.at("best_median_ns").get<double>();
    r.validate_only = m.value("validate_only", false);
  }
  return r;
}

json prepared_reply(std::int64_t id, double compile_time_s, const std::string& baseline_name) {
  json m{{"type", "prepared"}, {"id", id}, {"compile_time_s", compile_time_s}};
  if (!baseline_name.empty()) m["baseline"] = baseline_name;
  return m;
}

json sampled_reply(std::int64_t id, double ns, const Conditions& conditions) {
  json m{{"type", "sampled"}, {"id", id}, {"ns", ns}};
  if (!conditions.empty()) m["conditions"] = conditions;
  return m;
}

json measured_reply(std::int64_t id, const Measured& m, double compile_time_s) {
  json reply{{"type", "measured"},
             {"id", id},
             {"status", to_string(m.outcome.status)},
             {"note", m.outcome.note},
             {"samples_ns", m.outcome.samples_ns},
             {"compile_time_s", compile_time_s},
             {"validation",
              {{"max_abs_error", m.validation.max_abs_error}, {"mismatch_fraction", m.validation.mismatch_fraction}}}};
  if (!m.metrics.empty()) reply["metrics"] = m.metrics;
  return reply;
}

json failed_reply(std::int64_t id, TrialStatus status, const std::string& message) {
  return {{"type", "failed"}, {"id", id}, {"status", to_string(status)}, {"message", message}};
}

json error_reply(std::optional<std::int64_t> id, const std::string& message) {
  return {{"type", "error"}, {"id", id ? json(*id) : json(nullptr)}, {"message", message}};
}

json bye_reply(std::int64_t id) { return {{"type", "bye"}, {"id", id}}; }

Reply reply_from_json(const json& m) {
  const auto type = field<std::string>(m, "type", "reply");
  if (type == "error") throw ProtocolError("the worker answered with an error: " + m.value("message", "(no message)"));
  Reply r;
  r.id = field<std::int64_t>(m, "id", type);
  if (type == "prepared") {
    r.compile_time_s = m.value("compile_time_s", 0.0);
    r.baseline_name = m.value("baseline", "");
  } else if (type == "sampled") {
    r.ns = field<double>(m, "ns", "sampled");
    if (m.contains("conditions")) r.conditions = read_conditions(m.at("conditions"));
  } else if (type == "measured") {
    const auto status = m.contains("status") ? field<std::string>(m, "status", "measured") : std::string("ok");
    // A measured answer carries samples: a config that failed them is a `failed` answer.
    if (status != "ok" && status != "timeout" && status != "slow_abort")
      throw ProtocolError("measured.status '" + status +
                          "' is not ok, timeout or slow_abort; a config that failed is a 'failed' answer");
    r.status = trial_status_from_string(status);
    r.message = m.value("note", "");
    r.compile_time_s = m.value("compile_time_s", 0.0);
    r.samples_ns = field<std::vector<double>>(m, "samples_ns", "measured");
    if (m.contains("metrics")) r.metrics = read_metrics(m.at("metrics"));
    if (m.contains("validation") && m.at("validation").is_object()) {
      r.validated = true;
      r.validation.max_abs_error = validation_number(m.at("validation"), "max_abs_error");
      r.validation.mismatch_fraction = validation_number(m.at("validation"), "mismatch_fraction");
    }
  } else if (type == "failed") {
    try {
      r.status = trial_status_from_string(field<std::string>(m, "status", "failed"));
    } catch (const InputError& e) {
      throw ProtocolError(std::string("failed.status: ") + e.what());
    }
    if (r.status == TrialStatus::Ok) throw ProtocolError("a failed reply cannot have status ok");
    r.message = m.value("message", "");
  } else {
    throw ProtocolError("unknown reply type '" + type + "'; protocol " + std::to_string(kProtocolVersion) +
                        " answers with prepared, measured, sampled, failed, error and bye");
  }
  return r;
}

}  // namespace ktune::worker
