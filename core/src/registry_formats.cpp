#include "ktune/registry_formats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "json_path.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/run_store.h"
#include "ktune/stats.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::JsonPath;
using nlohmann::ordered_json;

const std::vector<std::string>& aiter_buckets() {
  static const std::vector<std::string> names{"small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge"};
  return names;
}

std::string aiter_bucket(std::int64_t m) {
  if (m < 32) return "small";
  if (m <= 32) return "medium_M32";
  if (m <= 64) return "medium_M64";
  if (m <= 128) return "medium_M128";
  if (m <= 256) return "large";
  return "xlarge";
}

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Parameters in the space's order, as aiter's files list them.
ordered_json config_json(const Config& c, const KernelFamily& family) {
  ordered_json j = ordered_json::object();
  const Config ordered = in_space_order(c, family.default_space);
  for (const auto& [k, v] : ordered.values()) j[k] = ordered_json(v.to_json());
  return j;
}

// Most common config among `configs`, ties to the smallest key (deterministic).
Config most_common_of(const std::vector<Config>& configs) {
  std::map<std::string, std::pair<int, const Config*>> counts;
  for (const auto& c : configs) {
    auto& slot = counts[c.key()];
    ++slot.first;
    slot.second = &c;
  }
  const auto best = std::max_element(counts.begin(), counts.end(),
                                     [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  return *best->second.second;
}

}  // namespace

std::vector<AiterFile> aiter_files(const Registry& registry, const KernelFamily& family) {
  if (family.bucket_field.empty())
    throw InputError(family.name + " has no bucket field: aiter's files bucket configs by M; export another format");
  const auto f = registry.entries().find(family.name);
  if (f == registry.entries().end() || f->second.empty())
    throw InputError("the " + registry.backend() + "/" + registry.device() + " registry has no " + family.name +
                     " entries to export");
  registry.check(family);

  // Group by every field but the bucket field; within a group, M -> config.
  struct Group {
    Problem rest;  // the key without the bucket field
    std::map<std::int64_t, Config> by_m;
  };
  std::map<std::string, Group> groups;
  std::map<std::string, std::set<std::string>> text_values;  // text field -> values seen
  for (const auto& [key, e] : f->second) {
    const Problem p = Problem::from_key(family.name, key);
    std::int64_t m = 0;
    try {
      m = p.num(family.bucket_field);
    } catch (const InputError& err) {
      throw InputError("registry entry " + family.name + " " + key + ": " + err.what() +
                       "; aiter's buckets need a size");
    }
    Problem rest;
    for (const auto& [k, v] : p.fields)
      if (k != family.bucket_field) rest.fields.emplace_back(k, v);
    Group& g = groups[rest.local_key()];
    g.rest = rest;
    g.by_m[m] = e.config;
    for (const auto& [k, v] : rest.fields)
      if (const KeyField* kf = family.field(k); kf && !kf->numeric) text_values[k].insert(v);
  }

  // aiter names its files {device}-GEMM-{tag} with tags such as A8W8_BLOCKSCALE: a family named
  // gemm_<tag> keeps only the tag, which aiter's kernels look up.
  const std::string tag_name = family.name.rfind("gemm_", 0) == 0 ? family.name.substr(5) : family.name;
  const std::string prefix = registry.device() + "-GEMM-" + upper(tag_name);
  std::vector<AiterFile> out;
  std::map<std::string, std::vector<Config>> per_bucket;  // for the default file
  std::vector<Config> all;
  for (const auto& [gkey, g] : groups) {
    std::string tag;
    for (const auto& [k, v] : g.rest.fields) {
      const KeyField* kf = family.field(k);
      // Text fields (dtypes) name the file only where they tell groups apart.
      if (kf && !kf->numeric && text_values[k].size() < 2) continue;
      tag += "-" + k + "=" + v;
    }
    AiterFile file{prefix + tag + ".json", ordered_json::object()};
    std::map<std::string, Config> buckets;  // the largest tuned M of each bucket wins
    for (const auto& [m, c] : g.by_m) {
      buckets[aiter_bucket(m)] = c;
      all.push_back(c);
    }
    for (const auto& b : aiter_buckets())
      if (const auto it = buckets.find(b); it != buckets.end()) {
        file.json[b] = config_json(it->second, family);
        per_bucket[b].push_back(it->second);
      }
    file.json["any"] = config_json(g.by_m.rbegin()->second, family);
    out.push_back(std::move(file));
  }
  AiterFile defaults{prefix + ".json", ordered_json::object()};
  for (const auto& b : aiter_buckets())
    if (const auto it = per_bucket.find(b); it != per_bucket.end())
      defaults.json[b] = config_json(most_common_of(it->second), family);
  defaults.json["any"] = config_json(most_common_of(all), family);
  out.push_back(std::move(defaults));
  return out;
}

std::vector<fs::path> export_aiter(const Registry& registry, const KernelFamily& family, const fs::path& dir) {
  const auto files = aiter_files(registry, family);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw InputError("cannot use " + dir.string() + " as the output folder" +
                     (ec ? ": " + ec.message() : ": not a folder"));
  std::vector<fs::path> written;
  for (const auto& f : files) {
    write_file_atomic(dir / f.name, f.json.dump(4) + "\n");
    written.push_back(dir / f.name);
  }
  return written;
}

namespace {

// "16,2048,4096", "(16, 2048, 4096)" or "16_2048_4096" -> its values.
std::vector<std::string> key_values(std::string key) {
  for (char& c : key)
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == '\'' || c == '"' || c == ' ' || c == '_')
      c = c == '_' ? ',' : ' ';
  std::vector<std::string> out;
  std::string cur;
  for (char c : key + ",") {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

Problem problem_of(const std::string& key, const KernelFamily& family, const std::vector<std::string>& key_fields) {
  const auto values = key_values(key);
  if (values.size() != key_fields.size())
    throw InputError("key \"" + key + "\" has " + std::to_string(values.size()) + " values, but --key-fields names " +
                     std::to_string(key_fields.size()));
  std::string shape;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].empty()) throw InputError("key \"" + key + "\": value " + std::to_string(i + 1) + " is empty");
    shape += (i ? " " : "") + key_fields[i] + "=" + values[i];
  }
  // The --shape parser checks the fields, their values and fills the defaults.
  auto problems = expand_shape(family, shape);
  if (problems.size() != 1)
    throw InputError("key \"" + key + "\" names " + std::to_string(problems.size()) + " shapes");
  return problems.front();
}

}  // namespace

TpuTuneEntries read_tpu_tune(const fs::path& file, const KernelFamily& family,
                             const std::vector<std::string>& key_fields) {
  if (key_fields.empty())
    throw InputError("--key-fields must name the family key fields the keys give, e.g. batch,out,in");
  for (const auto& k : key_fields)
    if (!family.field(k)) {
      std::string known;
      for (const auto& f : family.key_fields) known += (known.empty() ? "" : ", ") + f.name;
      throw InputError("--key-fields: " + family.name + " has no key field '" + k + "' (fields: " + known + ")");
    }
  const nlohmann::json j = read_json_file(file, "tpu-tune registry");
  const std::string origin = "tpu-tune registry " + file.string();
  if (!j.is_object() || j.empty())
    throw InputError(origin + ": expected an object of \"key_params\": {\"config\", \"stats\", \"metadata\"} entries");
  TpuTuneEntries out;
  std::set<std::string> seen;
  const std::string imported = "tpu-tune " + file.filename().string();
  for (const auto& [key, value] : j.items()) {
    const std::string where = origin + ": \"" + key + "\"";
    try {
      const JsonPath p(value, key);
      if (!value.is_object() || !value.contains("config"))
        p.fail("expected an entry {\"config\", \"stats\", \"metadata\"}");
      const Problem problem = problem_of(key, family, key_fields);
      RegistryEntry e;
      e.config = p["config"].parse(Config::from_json);
      family.default_space.check_config(e.config, "config");
      const JsonPath stats = p["stats"];
      e.latency_avg_ns = stats["latency_avg_ns"].positive_number();
      e.latency_std_ns = stats.has("latency_std_ns") ? stats["latency_std_ns"].non_negative_number() : 0;
      e.compile_time_s = stats.has("compile_time_s") ? stats["compile_time_s"].non_negative_number() : 0;
      if (const auto meta = p.find("metadata")) {
        e.benchmarking_method = meta->string_or("benchmarking_method", "amortized");
        if (meta->has("samples_ns")) e.samples_ns = (*meta)["samples_ns"].numbers();
      } else {
        e.benchmarking_method = "amortized";
      }
      for (double s : e.samples_ns)
        if (!(s > 0) || !std::isfinite(s))
          p.fail("metadata.samples_ns holds " + std::to_string(s) + ": samples must be positive");
      if (!e.samples_ns.empty()) {
        e.latency_median_ns = summarize(e.samples_ns).median_ns;
        ++out.median_from_samples;
      } else {
        e.latency_median_ns = e.latency_avg_ns;
        ++out.median_from_average;
      }
      e.run = "import";
      e.tuned_at = now_iso8601();
      e.ktune_version = version();
      e.imported_from = imported;
      const std::string local = problem.local_key();
      if (!seen.insert(local).second) p.fail("names the shape " + local + " a second time");
      out.entries.emplace_back(local, std::move(e));
    } catch (const InputError& err) {
      const std::string what = err.what();
      throw InputError(what.rfind(key, 0) == 0 ? origin + ": " + what : where + ": " + what);
    }
  }
  return out;
}

}  // namespace ktune
