#include "ktune/kernel_tuner_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include <zlib.h>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/replay_backend.h"
#include "ktune/stats.h"
#include "ktune/tuner.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;
// Ordered: the cache lists entries in the order Kernel Tuner measured them, and trial ids keep it.
using ojson = nlohmann::ordered_json;

namespace {

// Kernel Tuner's own bookkeeping beside each measurement: not metrics of the kernel.
const std::set<std::string> kBookkeeping = {"time",           "times",         "compile_time",   "verification_time",
                                            "benchmark_time", "strategy_time", "framework_time", "timestamp"};

struct Marker {
  const char* name;
  TrialStatus status;
  const char* meaning;
};
const Marker kMarkers[] = {
    {"InvalidConfig", TrialStatus::Pruned, "failed a restriction or a device limit"},
    {"CompilationFailedConfig", TrialStatus::CompileError, "did not compile"},
    {"RuntimeFailedConfig", TrialStatus::LaunchError, "failed at run time"},
};

const Marker* find_marker(const ojson& v) {
  if (!v.is_string()) return nullptr;
  for (const auto& m : kMarkers)
    if (v.get<std::string>() == m.name) return &m;
  return nullptr;
}

struct Inflater {
  z_stream z{};
  Inflater() {
    if (inflateInit2(&z, 15 + 16) != Z_OK) throw RunError("zlib: cannot start decompressing");  // 16: gzip
  }
  ~Inflater() { inflateEnd(&z); }
};

// The file a .json.gz holds, under the same size limit as a file read whole.
std::string gunzip(const std::string& data, const fs::path& file) {
  Inflater in;
  const std::uint64_t cap = max_file_bytes();
  std::string out;
  std::vector<char> buf(1 << 16);
  std::size_t fed = 0;
  for (int rc = Z_OK; rc != Z_STREAM_END;) {
    if (in.z.avail_in == 0 && fed < data.size()) {
      const std::size_t n = std::min<std::size_t>(data.size() - fed, 1u << 30);
      in.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      in.z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    in.z.next_out = reinterpret_cast<Bytef*>(buf.data());
    in.z.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&in.z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && in.z.avail_in == 0 && fed == data.size())
      throw InputError(file.string() + ": the gzip-compressed file ends before its data does (cut off while copied?)");
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      throw InputError(file.string() + ": not readable gzip data (" + (in.z.msg ? in.z.msg : "zlib error") + ")");
    out.append(buf.data(), buf.size() - in.z.avail_out);
    if (out.size() > cap)
      throw InputError(file.string() + ": decompresses to more than " + std::to_string(cap >> 20) +
                       " MiB, the most ktune reads of one file; set " + kMaxFileEnv + " (MiB) to read more");
  }
  return out;
}

// The cache's text: the file, or what it holds when gzip-compressed (it starts with 1f 8b).
std::string read_cache_text(const fs::path& file) {
  std::string text = read_text_file(file, "Kernel Tuner cache");
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
    return gunzip(text, file);
  return text;
}

// While Kernel Tuner runs, the file stops after `"key": {...},` with the cache and the outer
// object still open; it closes them itself when it reads such a file back, and so do we.
ojson parse_cache_text(const std::string& text, const fs::path& file) {
  const std::string origin = "Kernel Tuner cache " + file.string();
  try {
    return parse_ordered_json(text, origin);
  } catch (const InputError& whole) {
    std::string open = text;
    while (!open.empty() && std::isspace(static_cast<unsigned char>(open.back()))) open.pop_back();
    if (!open.empty() && open.back() == ',') open.pop_back();
    try {
      return parse_ordered_json(open + "}\n}", origin);
    } catch (const InputError&) {
      throw InputError(std::string(whole.what()) + " (closed or still being written, it is not a cache file)");
    }
  }
}

const ojson& member(const ojson& j, const std::string& key, const fs::path& file) {
  const auto it = j.find(key);
  if (it == j.end())
    throw InputError(file.string() + ": missing field \"" + key + "\"; is this a Kernel Tuner cache file (cache=...)?");
  return *it;
}

// Integers, booleans and strings stay what they are; whole floats read as integers.
ParamValue param_value(const ojson& v, const std::string& where) {
  if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>())
    return static_cast<std::int64_t>(v.get<double>());
  if (v.is_number_float())
    throw InputError(where + ": " + json_excerpt(v) +
                     " is not an integer; ktune parameters take integers, "
                     "booleans or strings");
  return ParamValue::from_json(nlohmann::json(v), where);
}

SearchSpace read_space(const ojson& root, const fs::path& file) {
  const ojson& keys = member(root, "tune_params_keys", file);
  const ojson& params = member(root, "tune_params", file);
  if (!keys.is_array() || keys.empty())
    throw InputError(file.string() + ": tune_params_keys: expected a non-empty list of parameter names");
  if (!params.is_object()) throw InputError(file.string() + ": tune_params: expected an object of value lists");
  std::vector<Parameter> out;
  for (const auto& k : keys) {
    if (!k.is_string()) throw InputError(file.string() + ": tune_params_keys: " + json_excerpt(k) + " is not a name");
    const std::string name = k.get<std::string>();
    const auto it = params.find(name);
    if (it == params.end() || !it->is_array() || it->empty())
      throw InputError(file.string() + ": tune_params[\"" + name + "\"]: expected a non-empty list of values");
    Parameter p{name, {}, "Kernel Tuner tune_params"};
    for (const auto& v : *it) p.values.push_back(param_value(v, file.string() + ": tune_params[\"" + name + "\"]"));
    out.push_back(std::move(p));
  }
  return SearchSpace(std::move(out), {});
}

// problem_size is an int, a list of ints (x, y, z) or "callable"; the key names its dimensions.
Problem read_problem(const ojson& root, const std::string& family, const fs::path& file) {
  Problem p;
  p.family = family;
  const auto it = root.find("problem_size");
  if (it == root.end()) {
    p.fields.emplace_back("problem_size", "none");  // a key is never empty
    return p;
  }
  auto value = [&](const ojson& v) {
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    const bool plain = v.is_string() && !v.get<std::string>().empty() &&
                       v.get<std::string>().find_first_of(",= ") == std::string::npos;
    if (!plain)
      throw InputError(file.string() + ": problem_size: " + json_excerpt(v) +
                       " is neither an integer nor a plain word");
    return v.get<std::string>();
  };
  static const char* kDims[] = {"x", "y", "z"};
  if (!it->is_array()) {
    p.fields.emplace_back("x", value(*it));
    return p;
  }
  for (std::size_t i = 0; i < it->size(); ++i)
    p.fields.emplace_back(i < 3 ? kDims[i] : "d" + std::to_string(i), value((*it)[i]));
  return p;
}

Trial read_entry(const ojson& rec, const SearchSpace& space, const std::string& where) {
  if (!rec.is_object()) throw InputError(where + ": expected an object");
  Trial t;
  for (const auto& p : space.parameters()) {
    const auto v = rec.find(p.name);
    if (v == rec.end()) throw InputError(where + ": missing the parameter \"" + p.name + "\"");
    t.config.set(p.name, param_value(*v, where + "." + p.name));
  }
  const Marker* failed = nullptr;
  for (const auto& [name, v] : rec.items())
    if ((failed = find_marker(v))) break;
  if (failed) {
    t.status = failed->status;
    t.error = std::string("Kernel Tuner: ") + failed->name + " (" + failed->meaning + ")";
  } else {
    const auto time = rec.find("time");
    if (time == rec.end() || !time->is_number())
      throw InputError(where +
                       ".time: expected a time in ms or a failure marker (InvalidConfig, "
                       "CompilationFailedConfig, RuntimeFailedConfig)");
    const auto times = rec.find("times");
    if (times != rec.end() && times->is_array() && !times->empty()) {
      for (const auto& s : *times) {
        if (!s.is_number()) throw InputError(where + ".times: " + json_excerpt(s) + " is not a time in ms");
        t.samples_ns.push_back(s.get<double>() * 1e6);
      }
    } else {
      t.samples_ns.push_back(time->get<double>() * 1e6);
    }
    t.stats = summarize(t.samples_ns);
  }
  if (const auto c = rec.find("compile_time"); c != rec.end() && c->is_number())
    t.compile_time_s = c->get<double>() / 1e3;
  for (const auto& [name, v] : rec.items())
    if (v.is_number() && !kBookkeeping.count(name) && !space.find(name)) t.metrics[name] = v.get<double>();
  return t;
}

// Kernel Tuner keeps whatever its timer returned. A time that is not positive and finite measured
// nothing, and as the fastest entry it would win: "time -0.5 ms" for such an entry.
std::optional<std::string> unusable_time(const Trial& t) {
  for (const double ns : t.samples_ns)
    if (!(ns > 0) || !std::isfinite(ns)) {
      std::ostringstream text;
      text << "time " << ns / 1e6 << " ms";
      return text.str();
    }
  return std::nullopt;
}

// The run's space: tune_params' product, or the space file, under the given constraints.
SearchSpace restricted_space(SearchSpace tune_params, const KernelTunerRestrictions& r, const fs::path& file) {
  if (r.empty()) return tune_params;
  std::vector<Constraint> constraints;
  if (r.space) {
    std::string cache_names, file_names;
    for (const auto& p : tune_params.parameters()) cache_names += (cache_names.empty() ? "" : ", ") + p.name;
    for (const auto& p : r.space->parameters()) file_names += (file_names.empty() ? "" : ", ") + p.name;
    bool same = tune_params.parameters().size() == r.space->parameters().size();
    for (const auto& p : tune_params.parameters()) same = same && r.space->find(p.name);
    if (!same)
      throw InputError("the search space file's parameters (" + file_names + ") are not those of " + file.string() +
                       " (tune_params_keys: " + cache_names + "); give it the cache's parameters");
    constraints = r.space->constraints();
  }
  constraints.insert(constraints.end(), r.constraints.begin(), r.constraints.end());
  const SearchSpace& base = r.space ? *r.space : tune_params;
  if (base.is_list()) return SearchSpace(base.parameters(), base.configs(), std::move(constraints));
  return SearchSpace(base.parameters(), std::move(constraints));
}

// The variables a replay's constraints see: the device's and the problem's (x, y, z).
Variables space_context(const RunMetadata& m) {
  Variables vars = m.device.variables();
  for (const auto& [k, v] : family_from_run(m).variables(m.problems.front())) vars[k] = v;
  return vars;
}

void check_restrictions(const SearchSpace& space, const Variables& context) {
  for (const auto& issue : space.check(context))
    throw InputError("restriction '" + space.constraints()[issue.index].expr + "': " + issue.message +
                     " (a restriction reads the parameters and the problem's fields)");
}

// Why `space` does not hold `config`, or nullopt when it does.
std::optional<std::string> outside(const SearchSpace& space, const std::set<std::string>& listed, const Config& config,
                                   const Variables& context) {
  if (space.is_list()) {
    if (!listed.count(config.key())) return "not in the search space file's list of configs";
  } else {
    for (const auto& p : space.parameters())
      if (std::find(p.values.begin(), p.values.end(), config.value(p.name)) == p.values.end())
        return p.name + "=" + config.value(p.name).text() + " is not one of the space's candidates";
  }
  return space.violated(config, context);
}

// The space's size before and after its constraints, counted where ktune can enumerate it; the
// prune report when constraints pruned it.
std::optional<PruneReport> count_space(const SearchSpace& space, const Variables& context, const std::string& what,
                                       CacheCoverage& c) {
  c.space_total = space.total_size();
  if (space.constraints().empty()) {
    c.space_valid = c.space_total;
    return std::nullopt;
  }
  if (c.space_total > kMaxSpaceSize) return std::nullopt;
  PruneReport report = space.prune_report(context);
  require_valid_configs(report, what);
  c.space_valid = report.valid;
  return report;
}

// The kernel as data, recorded as a worker's family is: whoever opens the run (the workbench's
// Setup page, registry commands) reads its key fields and where it came from, though ktune has no
// kernel for it.
nlohmann::json describe_import(const RunMetadata& m, const std::string& kernel, const fs::path& file) {
  KernelFamily f = family_from_run(m);
  f.backend = m.backend;
  f.source = "kernel_tuner_cache";
  f.description = "Kernel Tuner's " + kernel + " on " + m.device.name + ", imported from " + file.string() +
                  ": a recorded landscape (ktune has no kernel for it; a replay searches its configs)";
  return describe_family(f, m.space);
}

}  // namespace

KernelTunerCache read_kernel_tuner_cache(const fs::path& file, const std::string& family, const std::string& backend,
                                         const KernelTunerRestrictions& restrictions) {
  const ojson root = parse_cache_text(read_cache_text(file), file);
  if (!root.is_object()) throw InputError(file.string() + ": not a Kernel Tuner cache file (expected a JSON object)");
  KernelTunerCache out;
  RunMetadata& m = out.metadata;
  const ojson& kernel = member(root, "kernel_name", file);
  const ojson& device = member(root, "device_name", file);
  if (!kernel.is_string() || !device.is_string())
    throw InputError(file.string() + ": kernel_name and device_name must be strings");
  m.family = family.empty() ? kernel.get<std::string>() : family;
  m.backend = backend;
  m.device.backend = backend;
  m.device.name = device.get<std::string>();
  m.problems.push_back(read_problem(root, m.family, file));
  m.space = restricted_space(read_space(root, file), restrictions, file);
  const Variables context = space_context(m);
  check_restrictions(m.space, context);
  CacheCoverage& coverage = out.coverage;
  const std::string pkey = m.problems.front().key();
  const auto pruned = count_space(m.space, context, m.family + " " + pkey, coverage);
  std::set<std::string> listed;
  for (const auto& c : m.space.configs()) listed.insert(c.key());
  if (const auto obj = root.find("objective"); obj != root.end() && obj->is_string())
    m.versions.emplace_back("kernel_tuner_objective", obj->get<std::string>());
  m.ktune_version = version();
  m.started_at = m.finished_at = now_iso8601();
  m.arguments = {"ktune", "import", "kernel-tuner", file.string()};
  m.working_directory = current_working_directory();
  m.family_description = describe_import(m, kernel.get<std::string>(), file);

  const ojson& cache = member(root, "cache", file);
  if (!cache.is_object()) throw InputError(file.string() + ": cache: expected an object of measured configs");
  std::size_t max_samples = 1;
  for (const auto& [key, rec] : cache.items()) {
    const std::string entry = "cache[\"" + key + "\"]";
    Trial t = read_entry(rec, m.space, file.string() + ": " + entry);
    if (const auto why = unusable_time(t)) {
      out.skipped.push_back(entry + ": " + *why);
      continue;
    }
    t.id = static_cast<std::int64_t>(out.trials.size());
    t.problem_key = pkey;
    if (const auto why = outside(m.space, listed, t.config, context)) {
      out.outside_space.insert(t.id);
      (t.status == TrialStatus::Pruned ? coverage.invalid_outside : coverage.violating).push_back(entry + ": " + *why);
    } else {
      ++coverage.in_space;
    }
    max_samples = std::max(max_samples, t.samples_ns.size());
    out.trials.push_back(std::move(t));
  }
  if (out.trials.empty())
    throw InputError(file.string() + ": cache: " +
                     (out.skipped.empty() ? "no configs measured yet"
                                          : "no entry with a positive, finite time (" + out.skipped.front() + ")") +
                     "; nothing to import");
  // Kernel Tuner times a fixed number of launches per config, each on its own (iterations=7).
  m.measure.method = Method::PerLaunch;
  m.measure.warmup_ms = 0;
  m.measure.settle_ms = 0;
  m.measure.slow_abort = false;
  m.measure.min_samples = m.measure.max_samples = static_cast<int>(max_samples);
  // As a tuned run records how its constraints pruned the space (the workbench lists those configs).
  if (pruned) m.pruning.push_back({pkey, context, *pruned, out.trials.size()});
  return out;
}

void write_imported_run(const fs::path& run_dir, KernelTunerCache cache) {
  cache.metadata.run_name = run_dir.filename().string();
  RunStore store = RunStore::create(run_dir, cache.metadata);
  ProblemResult result;
  result.problem = cache.metadata.problems.front();
  result.space_total = cache.coverage.space_total;
  for (const auto& t : cache.trials) {
    store.append(t);
    if (!cache.coverage.space_valid && t.status != TrialStatus::Pruned) ++result.space_valid;
    const bool held = !cache.outside_space.count(t.id);
    if (held && t.status == TrialStatus::Ok && (!result.best || t.stats.median_ns < result.best->stats.median_ns))
      result.best = t;
  }
  if (cache.coverage.space_valid) result.space_valid = *cache.coverage.space_valid;
  if (result.best) result.choice = search_choice(*result.best, cache.metadata.measure.noise_target);
  store.finish({result}, "finished");
}

}  // namespace ktune
