// The run store's formats: trials.csv rows, results.json entries, trials as JSON.
#include "run_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "conditions_json.h"
#include "ktune/csv.h"
#include "ktune/error.h"

namespace ktune::detail {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> trial_header(const std::vector<std::string>& params, bool metrics_column) {
  std::vector<std::string> h = kLeadColumns;
  h.insert(h.end(), params.begin(), params.end());
  h.insert(h.end(), kTailColumns.begin(), kTailColumns.end());
  if (metrics_column) h.push_back(kMetricsColumn);
  return h;
}

std::vector<std::string> param_names(const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& p : space.parameters()) names.push_back(p.name);
  return names;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

// Shortest text that reads back as the same double, so samples survive a round trip bit-exactly.
std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

double parse_double(const std::string& text, const std::string& column) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw InputError("column " + column + ": '" + text + "' is not a number");
  return v;
}

std::int64_t parse_int(const std::string& text, const std::string& column) {
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw InputError("column " + column + ": '" + text + "' is not an integer");
  return v;
}

std::string format_samples(const std::vector<double>& samples) {
  std::string out;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i) out += ';';
    out += format_double(samples[i]);
  }
  return out;
}

std::vector<double> parse_samples(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(';', start);
    out.push_back(parse_double(text.substr(start, end - start), "samples_ns"));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// Why an ok row's numbers are no measurement ("median_ns is nan", "samples_ns holds -6"); empty
// when they are times. The median ranks configs, so it must be one; the other stats may only not be
// NaN or negative (the mean of finite samples near the double limit overflows to infinity).
std::string damaged_measurement(const Trial& t) {
  const Stats& s = t.stats;
  if (!std::isfinite(s.median_ns) || s.median_ns < 0) return "median_ns is " + format_double(s.median_ns);
  const std::pair<const char*, double> stats[] = {
      {"mean_ns", s.mean_ns}, {"std_ns", s.std_ns}, {"min_ns", s.min_ns}, {"max_ns", s.max_ns}};
  for (const auto& [column, v] : stats)
    if (std::isnan(v) || v < 0) return std::string(column) + " is " + format_double(v);
  for (const double ns : t.samples_ns)
    if (!std::isfinite(ns) || ns <= 0) return "samples_ns holds " + format_double(ns);
  return {};
}

}  // namespace

std::string format_metrics(const std::map<std::string, double>& metrics) {
  return metrics.empty() ? std::string() : json(metrics).dump();
}

std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> out;
  if (text.empty()) return out;
  const json j = parse_json(text, "column " + kMetricsColumn);
  if (!j.is_object()) throw InputError("column " + kMetricsColumn + ": not a JSON object");
  for (const auto& [name, v] : j.items()) {
    if (!v.is_number()) throw InputError("column " + kMetricsColumn + ": '" + name + "' is not a number");
    out[name] = v.get<double>();
  }
  return out;
}

std::vector<std::string> trial_row(const Trial& t, const std::vector<std::string>& params, bool metrics_column) {
  if (t.config.values().size() != params.size())
    throw InputError("trial " + std::to_string(t.id) + " has config " + t.config.key() + " but the run's space has " +
                     std::to_string(params.size()) + " parameters (" + join(params, ", ") + ")");
  std::vector<std::string> row = {std::to_string(t.id), t.problem_key, to_string(t.status)};
  for (const auto& name : params) row.push_back(t.config.value(name).text());
  const Stats& s = t.stats;
  for (double v : {s.median_ns, s.mean_ns, s.std_ns, s.min_ns, s.max_ns}) row.push_back(format_double(v));
  row.push_back(std::to_string(s.count));
  for (double v : {t.compile_time_s, t.tflops, t.gbps, t.max_abs_error, t.mismatch_fraction, t.started_at_s})
    row.push_back(format_double(v));
  row.push_back(t.error);
  row.push_back(format_samples(t.samples_ns));
  if (metrics_column) row.push_back(format_metrics(t.metrics));
  return row;
}

// `fields` follows trial_header(params). Errors name the column; the caller adds file and line.
Trial parse_trial(const std::vector<std::string>& fields, const std::vector<std::string>& params, bool metrics_column) {
  const std::size_t expected = kLeadColumns.size() + params.size() + kTailColumns.size() + (metrics_column ? 1 : 0);
  if (fields.size() != expected)
    throw InputError("expected " + std::to_string(expected) + " fields, found " + std::to_string(fields.size()));
  const std::size_t tail = kLeadColumns.size() + params.size();
  // The tail columns by name, so the code reads like the header.
  auto cell = [&](const std::string& column) -> const std::string& {
    const auto it = std::find(kTailColumns.begin(), kTailColumns.end(), column);
    return fields[tail + static_cast<std::size_t>(it - kTailColumns.begin())];
  };
  auto number = [&](const std::string& column) { return parse_double(cell(column), column); };
  Trial t;
  t.id = parse_int(fields[0], "id");
  t.problem_key = fields[1];
  if (t.problem_key.empty()) throw InputError("column problem is empty");
  t.status = trial_status_from_string(fields[2]);
  for (std::size_t p = 0; p < params.size(); ++p)
    t.config.set(params[p], ParamValue::parse(fields[kLeadColumns.size() + p]));
  t.stats.median_ns = number("median_ns");
  t.stats.mean_ns = number("mean_ns");
  t.stats.std_ns = number("std_ns");
  t.stats.min_ns = number("min_ns");
  t.stats.max_ns = number("max_ns");
  const std::int64_t count = parse_int(cell("count"), "count");
  if (count < 0) throw InputError("column count: must not be negative");
  t.stats.count = static_cast<std::size_t>(count);
  t.compile_time_s = number("compile_time_s");
  t.tflops = number("tflops");
  t.gbps = number("gbps");
  t.max_abs_error = number("max_abs_error");
  t.mismatch_fraction = number("mismatch_fraction");
  t.started_at_s = number("started_at_s");
  t.error = cell("error");
  t.samples_ns = parse_samples(cell("samples_ns"));
  if (metrics_column) t.metrics = parse_metrics(fields.back());
  // A damaged ok row (an edited file, a worker's lie from before ktune checked samples) is read as
  // the failed trial it is: a resumed run goes on, and the row cannot win.
  if (const std::string why = t.status == TrialStatus::Ok ? damaged_measurement(t) : ""; !why.empty()) {
    t.error = "recorded ok, but its " + why + ", which is no time: read as crashed, not measured again on resume" +
              (t.error.empty() ? "" : " (" + t.error + ")");
    t.status = TrialStatus::Crashed;
    t.stats = {};
    t.samples_ns.clear();
  }
  return t;
}

// Reads and checks trials.csv's header; returns its parameter columns and its complete rows.
TrialsFile read_trials_file(const fs::path& file) {
  const std::string text = read_text_file(file);
  std::vector<csv::Record> records = csv::parse(text, file.string());
  if (records.empty() || !records.front().complete)
    throw InputError(file.string() + ": no header line; the run folder is damaged, start a new run");
  std::vector<std::string> header = records.front().fields;
  TrialsFile out;
  out.metrics_column = !header.empty() && header.back() == kMetricsColumn;
  if (out.metrics_column) header.pop_back();
  const std::size_t fixed = kLeadColumns.size() + kTailColumns.size();
  if (header.size() < fixed || !std::equal(kLeadColumns.begin(), kLeadColumns.end(), header.begin()) ||
      !std::equal(kTailColumns.begin(), kTailColumns.end(), header.end() - static_cast<long>(kTailColumns.size())))
    throw InputError(file.string() + ":1: not a ktune trials header; expected " +
                     join(trial_header({"<parameters>"}), ","));
  out.params.assign(header.begin() + static_cast<long>(kLeadColumns.size()),
                    header.end() - static_cast<long>(kTailColumns.size()));
  if (!records.back().complete) {
    out.torn_offset = records.back().offset;
    out.torn_line = records.back().line;
    records.pop_back();
  }
  out.rows.assign(std::make_move_iterator(records.begin() + 1), std::make_move_iterator(records.end()));
  return out;
}

namespace {

json stats_json(const Stats& s) {
  return {{"latency_avg_ns", s.mean_ns}, {"latency_median_ns", s.median_ns}, {"latency_std_ns", s.std_ns},
          {"latency_min_ns", s.min_ns},  {"latency_max_ns", s.max_ns},       {"count", s.count}};
}

Stats stats_from(const JsonPath& p) {
  Stats s;
  s.mean_ns = p["latency_avg_ns"].number();
  s.median_ns = p["latency_median_ns"].number();
  s.std_ns = p["latency_std_ns"].number();
  s.min_ns = p["latency_min_ns"].number();
  s.max_ns = p["latency_max_ns"].number();
  s.count = p["count"].unsigned_integer();
  return s;
}

json result_json(const ResultEntry& r) {
  json stats = stats_json(r.stats);
  stats["compile_time_s"] = r.compile_time_s;
  // "stats" and "samples_ns" are the numbers the winner was chosen by; "chosen_by" says which
  // measurement that was, "search" keeps the search trial's own.
  json j = {{"problem", r.problem.to_json()},
            {"key", r.problem.key()},
            {"config", r.config.to_json()},
            {"stats", stats},
            {"tflops", r.tflops},
            {"samples_ns", r.samples_ns},
            {"chosen_by", to_string(r.choice.by)},
            {"trial_id", r.choice.trial_id},
            {"search", stats_json(r.choice.search)},
            {"flags", r.choice.flags.names()}};
  if (!r.conditions.empty()) j["conditions"] = r.conditions;
  if (r.baseline) {
    json b = stats_json(*r.baseline);
    b["name"] = r.baseline_name;
    if (!r.baseline_conditions.empty()) b["conditions"] = r.baseline_conditions;
    if (r.best_paired) {
      b["paired_best"] = stats_json(*r.best_paired);
      b["speedup"] = r.baseline->median_ns / r.best_paired->median_ns;
    }
    j["baseline"] = b;
  }
  if (!r.remeasured.empty()) {
    json group = json::array();
    for (const auto& m : r.remeasured) {
      json one = stats_json(m.stats);
      one["config"] = m.config.to_json();
      one["search_median_ns"] = m.search_median_ns;
      one["samples_ns"] = m.samples_ns;
      if (!m.conditions.empty()) one["conditions"] = m.conditions;
      group.push_back(one);
    }
    j["remeasured"] = group;
  }
  return j;
}

ResultEntry result_from(const JsonPath& p) {
  ResultEntry r;
  r.problem = p["problem"].parse(Problem::from_json);
  if (p["key"].string() != r.problem.key())
    p["key"].fail("'" + p["key"].string() + "' does not match the problem's key '" + r.problem.key() + "'");
  r.config = p["config"].parse(Config::from_json);
  r.stats = stats_from(p["stats"]);
  r.compile_time_s = p["stats"]["compile_time_s"].number();
  r.tflops = p["tflops"].number();
  r.samples_ns = p["samples_ns"].numbers();
  // Runs written before the winner's choice was recorded: the search decided, with these numbers.
  r.choice.search = r.stats;
  if (p.has("chosen_by")) {
    r.choice.by = chosen_by_from_string(p["chosen_by"].string());
    r.choice.trial_id = p["trial_id"].integer();
    r.choice.search = stats_from(p["search"]);
    std::vector<std::string> flags;
    p["flags"].for_each_element([&](const JsonPath& f) { flags.push_back(f.string()); });
    r.choice.flags = p["flags"].parse([&](const json&) { return WinnerFlags::from_names(flags); });
  }
  r.conditions = conditions_from(p);
  if (p.has("baseline")) {
    r.baseline = stats_from(p["baseline"]);
    r.baseline_name = p["baseline"]["name"].string();
    if (p["baseline"].has("paired_best")) r.best_paired = stats_from(p["baseline"]["paired_best"]);
    r.baseline_conditions = conditions_from(p["baseline"]);
  }
  if (p.has("remeasured"))
    for (std::size_t i = 0; i < p["remeasured"].size(); ++i) {
      const JsonPath m = p["remeasured"][i];
      r.remeasured.push_back({m["config"].parse(Config::from_json), m["search_median_ns"].number(), stats_from(m),
                              m.has("samples_ns") ? m["samples_ns"].numbers() : std::vector<double>{},
                              conditions_from(m)});
    }
  return r;
}

}  // namespace

json results_json(const RunResults& run) {
  json results = json::array();
  for (const auto& r : run.entries) results.push_back(result_json(r));
  return {{"run", run.run_name},
          {"family", run.family},
          {"backend", run.backend},
          {"device", run.device},
          {"device_slug", run.device_slug},
          {"benchmarking_method", run.method},
          {"finished_at", run.finished_at},
          {"results", results}};
}

RunResults results_from(const JsonPath& p) {
  RunResults run;
  run.run_name = p["run"].string();
  run.family = p["family"].string();
  run.backend = p["backend"].string();
  run.device = p["device"].string();
  run.device_slug = p["device_slug"].string();
  run.method = p["benchmarking_method"].string();
  run.finished_at = p["finished_at"].string();
  const JsonPath list = p["results"];
  for (std::size_t i = 0; i < list.size(); ++i) run.entries.push_back(result_from(list[i]));
  return run;
}

json trial_json(const Trial& t) {
  return {{"id", t.id},
          {"problem", t.problem_key},
          {"status", to_string(t.status)},
          {"config", t.config.to_json()},
          {"stats", stats_json(t.stats)},
          {"samples_ns", t.samples_ns},
          {"compile_time_s", t.compile_time_s},
          {"tflops", t.tflops},
          {"gbps", t.gbps},
          {"max_abs_error", t.max_abs_error},
          {"mismatch_fraction", t.mismatch_fraction},
          {"started_at_s", t.started_at_s},
          {"error", t.error},
          {"metrics", t.metrics}};
}

}  // namespace ktune::detail
