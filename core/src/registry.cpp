#include "ktune/registry.h"

#include "json_path.h"
#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/kernel_family.h"
#include "ktune/run_store.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::JsonPath;
using nlohmann::json;

namespace {

constexpr int kRegistryFormat = 1;

RegistryEntry entry_from(const JsonPath& p) {
  RegistryEntry e;
  e.config = p["config"].parse(Config::from_json);
  const JsonPath stats = p["stats"];
  // Latencies decide what apply keeps: a zero, negative or infinite one would beat or block
  // every real measurement of its key.
  e.latency_avg_ns = stats["latency_avg_ns"].positive_number();
  e.latency_median_ns = stats["latency_median_ns"].positive_number();
  e.latency_std_ns = stats["latency_std_ns"].non_negative_number();
  e.compile_time_s = stats["compile_time_s"].non_negative_number();
  const JsonPath meta = p["metadata"];
  e.benchmarking_method = meta["benchmarking_method"].string();
  e.samples_ns = meta["samples_ns"].numbers();
  e.run = meta["run"].string();
  e.tuned_at = meta["tuned_at"].string();
  e.ktune_version = meta["ktune_version"].string();
  return e;
}

// A registry file's folder and name must be one path component each.
void check_component(const std::string& what, const std::string& s) {
  if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos || s.find('\\') != std::string::npos)
    throw InputError("registry " + what + " '" + s + "' cannot name a file (empty, '.', '..' or with a slash)");
}

std::int64_t next_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

bool has_field(const Problem& p, const std::string& name) {
  for (const auto& [k, v] : p.fields)
    if (k == name) return true;
  return false;
}

// The command that tunes `problem`: a sharded problem is stored by its local shape, but the CLI
// takes the global one plus the sharding, so the split field is multiplied back.
std::string tune_command(const std::string& backend, const KernelFamily& family, const Problem& problem) {
  Problem global = problem;
  const std::string& split_field = problem.tp_split_dim == TpSplitDim::Out  ? family.tp_out_field
                                   : problem.tp_split_dim == TpSplitDim::In ? family.tp_in_field
                                                                            : std::string();
  if (problem.tp_size > 1 && !split_field.empty() && has_field(problem, split_field))
    global.set(split_field, std::to_string(problem.num(split_field) * problem.tp_size));
  std::string shape;
  for (const auto& [k, v] : global.fields) {
    if (!shape.empty()) shape += ' ';
    shape += k + "=" + v;
  }
  std::string cmd = "ktune tune " + family.name + " --backend " + backend + " --shape \"" + shape + "\"";
  if (problem.tp_size > 1)
    cmd += " --tp-size " + std::to_string(problem.tp_size) + " --tp-split-dim " + to_string(problem.tp_split_dim);
  return cmd;
}

}  // namespace

Config in_space_order(const Config& config, const SearchSpace& space) {
  Config out;
  for (const auto& p : space.parameters())
    if (config.has(p.name)) out.set(p.name, config.value(p.name));
  for (const auto& [name, value] : config.values())
    if (!out.has(name)) out.set(name, value);
  return out;
}

json RegistryEntry::to_json() const {
  return {{"config", config.to_json()},
          {"stats",
           {{"latency_avg_ns", latency_avg_ns},
            {"latency_median_ns", latency_median_ns},
            {"latency_std_ns", latency_std_ns},
            {"compile_time_s", compile_time_s}}},
          {"metadata",
           {{"benchmarking_method", benchmarking_method},
            {"samples_ns", samples_ns},
            {"run", run},
            {"tuned_at", tuned_at},
            {"ktune_version", ktune_version}}}};
}

RegistryEntry RegistryEntry::from_json(const json& j) { return entry_from(JsonPath(j)); }

fs::path Registry::file_for(const fs::path& root, const std::string& backend, const std::string& device_slug) {
  check_component("backend", backend);
  check_component("device slug", device_slug);
  return root / backend / (device_slug + ".json");
}

Registry Registry::load(const fs::path& file) {
  // A missing file is a registry nobody has written to yet; its name says whose it is.
  if (!fs::exists(file)) return Registry(file.parent_path().filename().string(), file.stem().string());
  const fs::path backup = file.string() + ".bak";
  const std::string advice = fs::exists(backup) ? "; fix it, or restore the previous version: cp " + backup.string() +
                                                      " " + file.string()
                                                : "; fix it, or move it away to start an empty registry";
  const std::string origin = "registry " + file.string();
  try {
    return from_json(read_json_file(file, "registry"));
  } catch (const InputError& e) {
    const std::string what = e.what();
    // Errors of the parse already name the file; those of the fields do not.
    throw InputError((what.rfind(origin, 0) == 0 ? what : origin + ": " + what) + advice);
  }
}

void Registry::save(const fs::path& file) const {
  if (file.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec) throw RunError("cannot create " + file.parent_path().string() + ": " + ec.message());
  }
  // Backup first: a kill between the two writes leaves the old registry in both files.
  if (fs::exists(file)) write_file_atomic(file.string() + ".bak", read_text_file(file));
  write_file_atomic(file, to_json().dump(2) + "\n");
}

const RegistryEntry* Registry::find(const std::string& family, const std::string& problem_key) const {
  const auto f = entries_.find(family);
  if (f == entries_.end()) return nullptr;
  const auto e = f->second.find(problem_key);
  return e == f->second.end() ? nullptr : &e->second;
}

void Registry::set(const std::string& family, const std::string& problem_key, RegistryEntry entry) {
  entries_[family][problem_key] = std::move(entry);
}

std::size_t Registry::size() const {
  std::size_t n = 0;
  for (const auto& [family, keys] : entries_) n += keys.size();
  return n;
}

LookupResult Registry::lookup(const KernelFamily& family, const Problem& problem) const {
  LookupResult r;
  const std::string key = problem.key();
  if (const RegistryEntry* e = find(family.name, key)) {
    r.config = in_space_order(e->config, family.default_space);
    r.source = LookupSource::Exact;
    r.matched_key = key;
    r.entry = e;
    return r;
  }
  const std::string where = "the " + (backend_.empty() ? family.backend : backend_) + "/" + device_ + " registry";
  const std::string command = tune_command(backend_.empty() ? family.backend : backend_, family, problem);

  std::string bucket_key;
  if (!family.bucket_field.empty() && has_field(problem, family.bucket_field)) {
    // A text value in the bucket field (not a size) has no bucket.
    try {
      const std::int64_t v = problem.num(family.bucket_field);
      if (v > 0 && next_pow2(v) != v) {
        Problem bucket = problem;
        bucket.set(family.bucket_field, std::to_string(next_pow2(v)));
        bucket_key = bucket.key();
      }
    } catch (const InputError&) {
    }
  }
  if (!bucket_key.empty()) {
    if (const RegistryEntry* e = find(family.name, bucket_key)) {
      r.config = in_space_order(e->config, family.default_space);
      r.source = LookupSource::Bucket;
      r.matched_key = bucket_key;
      r.entry = e;
      r.warning = "no tuned config for " + family.name + " " + key + " in " + where + "; using the one tuned for " +
                  bucket_key + ". Tune this shape with: " + command;
      return r;
    }
  }
  r.config = family.default_config;
  r.source = LookupSource::Default;
  r.warning = "no tuned config for " + family.name + " " + key + (bucket_key.empty() ? "" : " (nor its bucket " + bucket_key + ")") +
              " in " + where + "; using the family's default config " + family.default_config.key() +
              ". Tune it with: " + command;
  return r;
}

json Registry::to_json() const {
  json entries = json::object();
  for (const auto& [family, keys] : entries_) {
    json f = json::object();
    for (const auto& [key, entry] : keys) f[key] = entry.to_json();
    entries[family] = f;
  }
  return {{"ktune_registry", kRegistryFormat}, {"backend", backend_}, {"device", device_}, {"entries", entries}};
}

Registry Registry::from_json(const json& j) {
  const JsonPath root(j);
  if (!root.has("ktune_registry")) root.fail("not a ktune registry (no \"ktune_registry\" field)");
  const std::int64_t format = root["ktune_registry"].integer();
  if (format != kRegistryFormat)
    root["ktune_registry"].fail("registry format " + std::to_string(format) + " is not supported by this ktune (it reads " +
                                std::to_string(kRegistryFormat) + ")");
  Registry reg(root["backend"].string(), root["device"].string());
  root["entries"].for_each_member([&](const std::string& family, const JsonPath& keys) {
    keys.for_each_member([&](const std::string& key, const JsonPath& entry) { reg.set(family, key, entry_from(entry)); });
  });
  return reg;
}

}  // namespace ktune
