#include "ktune/registry_format_tpu.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "json_path.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/problem.h"
#include "ktune/run_store.h"
#include "ktune/stats.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::JsonPath;
using nlohmann::json;

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// ktune's qmatmul names for tpu-inference's TunedKey (n_batch, n_out, n_in, x_q_dtype, w_q_dtype).
const std::vector<std::string> kFlatKeyFields{"batch", "out", "in", "x_dtype", "w_dtype"};
// TunedValue's order, and the RPA pair's; the loaders need the first 3 and exactly 2.
const std::vector<std::string> kFlatListParams{"batch_block_size", "out_block_size", "in_block_size",
                                               "n_lane_multiplier"};
const std::vector<std::string> kNestedListParams{"num_kv_pages_per_block", "num_q_per_block"};
constexpr std::size_t kFlatListMin = 3, kNestedListMax = 2;
// ktune's paged_attention key fields the attention layout's keys give.
const std::vector<std::string> kNestedFields{"num_q_heads", "num_kv_heads", "head_dim", "page_size", "max_model_len"};

// jax's dtype names (jnp.dtype(x).name: tpu-inference's keys) beside ktune's.
const std::pair<const char*, const char*> kDtypeNames[] = {{"float32", "f32"},
                                                           {"bfloat16", "bf16"},
                                                           {"float16", "f16"},
                                                           {"float8_e4m3fn", "fp8_e4m3"},
                                                           {"float8_e5m2", "fp8_e5m2"}};

// A jax dtype name as `field` spells it: ktune's name where its choices have that and not jax's.
std::string to_family_dtype(const KernelFamily& family, const std::string& field, const std::string& name) {
  const KeyField* f = family.field(field);
  const auto allowed = [&](const std::string& n) { return std::count(f->choices.begin(), f->choices.end(), n) > 0; };
  if (!f || f->numeric || f->choices.empty() || allowed(name)) return name;
  for (const auto& [jax, ours] : kDtypeNames)
    if (name == jax && allowed(ours)) return ours;
  return name;
}

std::string to_jax_dtype(const std::string& name) {
  for (const auto& [jax, ours] : kDtypeNames)
    if (name == ours) return jax;
  return name;
}

std::string joined(const std::vector<std::string>& names, std::size_t n = SIZE_MAX) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < n; ++i) out += (i ? ", " : "") + names[i];
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

void require_fields(const KernelFamily& family, const std::vector<std::string>& names, const std::string& what) {
  for (const auto& k : names)
    if (!family.field(k)) {
      std::string known;
      for (const auto& f : family.key_fields) known += (known.empty() ? "" : ", ") + f.name;
      throw InputError(what + ": " + family.name + " has no key field '" + k + "' (fields: " + known + ")");
    }
}

bool is_nested_family(const KernelFamily& family) {
  return std::all_of(kNestedFields.begin(), kNestedFields.end(), [&](const auto& f) { return family.field(f); });
}

const std::vector<std::string>& list_params_of(const TpuOptions& options, TpuLayout layout) {
  if (!options.list_params.empty()) return options.list_params;
  return layout == TpuLayout::Nested ? kNestedListParams : kFlatListParams;
}

// "16,2048,4096,float8_e4m3fn,int8" or "(16, 2048, 4096)" -> its values; only commas separate
// them (dtype names hold underscores).
std::vector<std::string> key_values(const std::string& key) {
  std::vector<std::string> out(1);
  for (char c : key) {
    if (c == ',')
      out.emplace_back();
    else if (!std::strchr("()[]'\" ", c))
      out.back() += c;
  }
  return out;
}

Fields parse_fixed(const KernelFamily& family, const std::vector<std::string>& fixed) {
  Fields out;
  for (const auto& s : fixed) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw InputError("--key '" + s + "': give field=value, e.g. num_sequences=35");
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    require_fields(family, {out.back().first}, "--key " + s);
  }
  return out;
}

// The --shape parser checks the fields and their values and fills the family's defaults.
Problem problem_of(const KernelFamily& family, const Fields& fields) {
  std::string shape;
  for (const auto& [k, v] : fields) {
    if (v.empty()) throw InputError(k + " is empty");
    shape += (shape.empty() ? "" : " ") + k + "=" + v;
  }
  auto problems = expand_shape(family, shape);
  if (problems.size() != 1) throw InputError("the key names " + std::to_string(problems.size()) + " shapes");
  return problems.front();
}

class Reader {
 public:
  Reader(const KernelFamily& family, const TpuOptions& options, const fs::path& file, TpuImport& out)
      : family_(family),
        list_params_(list_params_of(options, out.layout)),
        imported_("tpu-inference " + file.filename().string()),
        out_(out) {}

  // One value at `p`, keyed by the fields `fields_of` gives; errors name p's key path.
  void add(const JsonPath& p, const std::function<Fields()>& fields_of) {
    try {
      const Problem problem = problem_of(family_, fields_of());
      RegistryEntry e = entry_of(p);
      const std::string local = problem.local_key();
      if (!seen_.insert(local).second) p.fail("names the shape " + local + " a second time");
      out_.entries.emplace_back(local, std::move(e));
    } catch (const InputError& err) {
      const std::string what = err.what();
      throw InputError(what.rfind(p.path(), 0) == 0 ? what : p.path() + ": " + what);
    }
  }

 private:
  RegistryEntry entry_of(const JsonPath& p) {
    RegistryEntry e;
    if (p.json().is_array()) {
      e.config = list_config(p);
      ++out_.from_lists;
    } else {
      if (!p.json().is_object() || !p.has("config"))
        p.fail("expected {\"config\", \"stats\", \"metadata\"} or a list of block sizes [" + joined(list_params_) +
               "]");
      e.config = p["config"].parse(Config::from_json);
      read_stats(p, e);
    }
    family_.default_space.check_config(e.config, "config");
    if (!e.measured()) ++out_.unmeasured;
    e.run = "import";
    e.tuned_at = now_iso8601();
    e.ktune_version = version();
    e.imported_from = imported_;
    return e;
  }

  Config list_config(const JsonPath& p) const {
    if (p.size() == 0 || p.size() > list_params_.size())
      p.fail("has " + std::to_string(p.size()) + " values, but the list's parameters are " + joined(list_params_) +
             " (name them with --list-params)");
    Config c;
    for (std::size_t i = 0; i < p.size(); ++i) c.set(list_params_[i], p[i].integer());
    return c;
  }

  // tpu-inference ships most configs with "stats": {} or none: a config, not a measurement. It
  // records no median: the median of samples_ns where there are samples, else latency_avg_ns.
  void read_stats(const JsonPath& p, RegistryEntry& e) {
    const auto meta = p.find("metadata");
    const auto stats = p.find("stats");
    if (!stats || !stats->object().contains("latency_avg_ns")) return;
    e.latency_avg_ns = (*stats)["latency_avg_ns"].positive_number();
    e.latency_std_ns = stats->has("latency_std_ns") ? (*stats)["latency_std_ns"].non_negative_number() : 0;
    e.compile_time_s = stats->has("compile_time_s") ? (*stats)["compile_time_s"].non_negative_number() : 0;
    e.benchmarking_method = meta ? meta->string_or("benchmarking_method", "amortized") : "amortized";
    if (meta && meta->has("samples_ns")) e.samples_ns = (*meta)["samples_ns"].numbers();
    for (double s : e.samples_ns)
      if (!(s > 0) || !std::isfinite(s))
        p.fail("metadata.samples_ns holds " + std::to_string(s) + ": samples must be positive");
    if (!e.samples_ns.empty()) {
      e.latency_median_ns = summarize(e.samples_ns).median_ns;
      ++out_.median_from_samples;
    } else {
      e.latency_median_ns = e.latency_avg_ns;
      ++out_.median_from_average;
    }
  }

  const KernelFamily& family_;
  const std::vector<std::string>& list_params_;
  const std::string imported_;
  TpuImport& out_;
  std::set<std::string> seen_;
};

void read_flat(const JsonPath& root, const KernelFamily& family, const std::vector<std::string>& key_fields,
               const Fields& fixed, Reader& reader) {
  root.for_each_member([&](const std::string& key, const JsonPath& value) {
    reader.add(value, [&] {
      const auto values = key_values(key);
      if (values.size() != key_fields.size())
        throw InputError("key \"" + key + "\" has " + std::to_string(values.size()) +
                         " values, but --key-fields names " + std::to_string(key_fields.size()) + " (" +
                         joined(key_fields) + ")");
      Fields fields = fixed;
      for (std::size_t i = 0; i < values.size(); ++i)
        fields.emplace_back(key_fields[i], to_family_dtype(family, key_fields[i], values[i]));
      return fields;
    });
  });
}

// q and kv dtypes onto the family's fields: q_dtype and kv_dtype, else one dtype when they agree.
void add_dtypes(const KernelFamily& family, const std::string& q, const std::string& kv, Fields& fields) {
  if (family.field("q_dtype") && family.field("kv_dtype")) {
    fields.emplace_back("q_dtype", to_family_dtype(family, "q_dtype", q));
    fields.emplace_back("kv_dtype", to_family_dtype(family, "kv_dtype", kv));
  } else if (!family.field("dtype")) {
    throw InputError(family.name + " has no dtype key field (nor q_dtype and kv_dtype) for q_" + q + "_kv_" + kv);
  } else if (q != kv) {
    throw InputError("q is " + q + " and kv " + kv + ", but " + family.name +
                     " has one dtype key field (a family with q_dtype and kv_dtype takes both)");
  } else {
    fields.emplace_back("dtype", to_family_dtype(family, "dtype", q));
  }
}

// page size -> "q_{dtype}_kv_{dtype}" -> "q_head-N_kv_head-N_head-N" -> "max_model_len-N-sw-None".
void read_nested(const JsonPath& root, const KernelFamily& family, const Fields& fixed, Reader& reader,
                 TpuImport& out) {
  static const std::regex dtypes_re("q_(.+)_kv_(.+)"), heads_re("q_head-(\\d+)_kv_head-(\\d+)_head-(\\d+)"),
      extra_re("max_model_len-(\\d+)-sw-(None|\\d+)");
  const bool windows = family.field("sliding_window") != nullptr;
  root.for_each_member([&](const std::string& page, const JsonPath& p1) {
    if (!all_digits(page))
      p1.fail("expected a page size (\"128\") as the first level of tpu-inference's attention file");
    p1.for_each_member([&](const std::string& dtypes, const JsonPath& p2) {
      std::smatch d;
      if (!std::regex_match(dtypes, d, dtypes_re))
        p2.fail("expected \"q_{dtype}_kv_{dtype}\" (q_bfloat16_kv_bfloat16)");
      p2.for_each_member([&](const std::string& heads, const JsonPath& p3) {
        std::smatch h;
        if (!std::regex_match(heads, h, heads_re)) p3.fail("expected \"q_head-N_kv_head-N_head-N\"");
        p3.for_each_member([&](const std::string& extra, const JsonPath& p4) {
          std::smatch x;
          if (!std::regex_match(extra, x, extra_re)) p4.fail("expected \"max_model_len-N-sw-None\" or \"...-sw-N\"");
          if (x[2] != "None" && !windows) {
            out.skipped.push_back(p4.path() + ": a sliding window of " + x[2].str() + ", but " + family.name +
                                  " has no sliding_window key field");
            return;
          }
          reader.add(p4, [&] {
            Fields fields = fixed;
            fields.insert(fields.end(), {{"page_size", page},
                                         {"num_q_heads", h[1]},
                                         {"num_kv_heads", h[2]},
                                         {"head_dim", h[3]},
                                         {"max_model_len", x[1]}});
            if (x[2] != "None") fields.emplace_back("sliding_window", x[2]);
            add_dtypes(family, d[1], d[2], fields);
            return fields;
          });
        });
      });
    });
  });
}

// tpu-inference's attention files start at a page size ("128"); its matmul keys hold commas.
TpuLayout layout_of(const json& j) {
  const auto first = j.begin();
  return all_digits(first.key()) && first->is_object() && !first->contains("config") ? TpuLayout::Nested
                                                                                     : TpuLayout::Flat;
}

}  // namespace

TpuImport read_tpu_inference(const fs::path& file, const KernelFamily& family, const TpuOptions& options) {
  const std::string origin = "tpu-inference file " + file.string();
  const json j = read_json_file(file, "tpu-inference tuned data");
  if (!j.is_object() || j.empty())
    throw InputError(origin + ": expected an object of tuned configs (\"16,2048,4096,int8,int8\": ..., or \"128\": " +
                     "{\"q_bfloat16_kv_bfloat16\": ...})");
  TpuImport out;
  out.layout = layout_of(j);
  const Fields fixed = parse_fixed(family, options.fixed_fields);
  Reader reader(family, options, file, out);
  try {
    if (out.layout == TpuLayout::Nested) {
      require_fields(family, kNestedFields, "tpu-inference's attention keys");
      read_nested(JsonPath(j), family, fixed, reader, out);
    } else {
      const auto& key_fields = options.key_fields.empty() ? kFlatKeyFields : options.key_fields;
      require_fields(family, key_fields, "--key-fields");
      read_flat(JsonPath(j), family, key_fields, fixed, reader);
    }
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
  return out;
}

namespace {

// The keys of one entry in the nested layout, from the page size down.
std::vector<std::string> nested_path(const KernelFamily& family, const Problem& p) {
  std::string q, kv;
  if (family.field("q_dtype") && family.field("kv_dtype")) {
    q = p.field("q_dtype");
    kv = p.field("kv_dtype");
  } else if (family.field("dtype")) {
    q = kv = p.field("dtype");
  } else {
    throw InputError(family.name + " has no dtype key field: tpu-inference's attention keys need one");
  }
  // A family's sliding_window default is its "no window" (tpu-inference's None).
  const KeyField* w = family.field("sliding_window");
  const std::string window = w && p.field(w->name) != w->default_value ? p.field(w->name) : "None";
  return {p.field("page_size"), "q_" + to_jax_dtype(q) + "_kv_" + to_jax_dtype(kv),
          "q_head-" + p.field("num_q_heads") + "_kv_head-" + p.field("num_kv_heads") + "_head-" + p.field("head_dim"),
          "max_model_len-" + p.field("max_model_len") + "-sw-" + window};
}

std::string flat_key(const KernelFamily& family, const Problem& p, const std::vector<std::string>& key_fields) {
  std::string key;
  for (const auto& k : key_fields) {
    const KeyField* f = family.field(k);
    key += (key.empty() ? "" : ",") + (f && !f->numeric ? to_jax_dtype(p.field(k)) : p.field(k));
  }
  return key;
}

json value_json(const RegistryEntry& e, const KernelFamily& family, const std::vector<std::string>& params, bool nested,
                bool lists) {
  if (lists) {
    json list = json::array();
    for (const auto& name : params) {
      if (!e.config.has(name) || list.size() == (nested ? kNestedListMax : params.size())) break;
      list.push_back(e.config.get(name));
    }
    const std::size_t need = nested ? kNestedListMax : kFlatListMin;
    if (list.size() < need)
      throw InputError("config " + e.config.key() + " gives " + std::to_string(list.size()) + " of the " +
                       std::to_string(need) + " values tpu-inference's lists hold (parameters " + joined(params) +
                       "; name the config's parameters in order with --list-params)");
    return list;
  }
  json out = {{"config", in_space_order(e.config, family.default_space).to_json()}, {"stats", json::object()}};
  if (e.measured()) {
    out["stats"] = {{"latency_avg_ns", e.latency_avg_ns},
                    {"latency_std_ns", e.latency_std_ns},
                    {"compile_time_s", e.compile_time_s}};
    out["metadata"] = {{"benchmarking_method", e.benchmarking_method}, {"samples_ns", e.samples_ns}};
  }
  return out;
}

}  // namespace

TpuFile tpu_inference_file(const Registry& registry, const KernelFamily& family, const TpuOptions& options) {
  const auto f = registry.entries().find(family.name);
  if (f == registry.entries().end() || f->second.empty())
    throw InputError("the " + registry.backend() + "/" + registry.device() + " registry has no " + family.name +
                     " entries to export");
  registry.check(family);
  const bool nested = is_nested_family(family);
  const auto& key_fields = options.key_fields.empty() ? kFlatKeyFields : options.key_fields;
  if (!nested) require_fields(family, key_fields, "--key-fields");
  const auto& params = list_params_of(options, nested ? TpuLayout::Nested : TpuLayout::Flat);

  TpuFile out;
  out.path = nested ? fs::path("ragged_paged_attention") / "v3" / (registry.device() + ".json")
                    : fs::path("quantized_matmul") / (registry.device() + ".json");
  // tpu-inference's key path -> (bucket value, entry): of keys that only fields it lacks tell
  // apart, the largest bucket value's (the most sequences) is written.
  std::map<std::vector<std::string>, std::pair<std::int64_t, const RegistryEntry*>> chosen;
  for (const auto& [key, e] : f->second) {
    try {
      const Problem p = Problem::from_key(family.name, key);
      const auto path = nested ? nested_path(family, p) : std::vector<std::string>{flat_key(family, p, key_fields)};
      const std::int64_t bucket = family.bucket_field.empty() ? 0 : p.num(family.bucket_field);
      const auto [it, fresh] = chosen.try_emplace(path, bucket, &e);
      if (!fresh) ++out.folded;
      if (!fresh && bucket > it->second.first) it->second = {bucket, &e};
    } catch (const InputError& err) {
      throw InputError("registry entry " + family.name + " " + key + ": " + err.what());
    }
  }
  out.json = json::object();
  for (const auto& [path, chosen_entry] : chosen) {
    json* slot = &out.json;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) slot = &(*slot)[path[i]];
    try {
      (*slot)[path.back()] = value_json(*chosen_entry.second, family, params, nested, options.lists);
    } catch (const InputError& err) {
      throw InputError("registry entry " + family.name + " " + joined(path) + ": " + err.what());
    }
  }
  out.entries = chosen.size();
  return out;
}

TpuFile export_tpu_inference(const Registry& registry, const KernelFamily& family, const fs::path& dir,
                             const TpuOptions& options) {
  TpuFile file = tpu_inference_file(registry, family, options);
  file.path = dir / file.path;
  const fs::path& target = file.path;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec || !fs::is_directory(target.parent_path()))
    throw InputError("cannot use " + target.parent_path().string() + " as the output folder" +
                     (ec ? ": " + ec.message() : ": not a folder"));
  write_file_atomic(target, file.json.dump(2) + "\n");
  return file;
}

}  // namespace ktune
