#include "ktune/registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "json_limited.h"
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
  // Fields newer files have; older ones read without them.
  if (const auto tp = meta.find("tp_size")) {
    e.tp_size = static_cast<int>(tp->integer());
    if (e.tp_size < 1) tp->fail("tp_size must be at least 1");
    if (e.tp_size > 1) e.tp_split_dim = to_string(tp_split_dim_from_string(meta["tp_split_dim"].string()));
  }
  if (const auto v = meta.find("versions"))
    v->for_each_member([&](const std::string& k, const JsonPath& x) { e.versions.emplace_back(k, x.string()); });
  e.imported_from = meta.string_or("imported_from", "");
  if (const auto by = meta.find("chosen_by"))
    e.chosen_by = by->parse([](const json& v) { return chosen_by_from_string(v.get<std::string>()); });
  if (const auto search = meta.find("search_median_ns")) e.search_median_ns = search->positive_number();
  if (const auto flags = meta.find("flags")) {
    std::vector<std::string> names;
    flags->for_each_element([&](const JsonPath& f) { names.push_back(f.string()); });
    e.flags = flags->parse([&](const json&) { return WinnerFlags::from_names(names); });
  }
  return e;
}

// entry_from's reads without their JSON paths, which cost more than the entry (a string per
// member and per sample: millions for a registry of 100,000 entries). Accepts only what
// entry_from accepts, and gives up (nullopt) at anything it would refuse, for entry_from to read
// again and name the culprit.
class QuickEntry {
 public:
  static std::optional<RegistryEntry> read(const json& j) {
    try {
      QuickEntry q;
      if (q.entry(j)) return std::move(q.e_);
    } catch (const InputError&) {
    } catch (const json::exception&) {
    }
    return std::nullopt;
  }

 private:
  static const json* member(const json& o, const char* key) {
    const auto it = o.find(key);
    return it == o.end() ? nullptr : &*it;
  }
  static bool number(const json* v, double& out, bool zero_ok) {
    if (!v || !v->is_number()) return false;
    out = v->get<double>();
    return (zero_ok ? out >= 0 : out > 0) && std::isfinite(out);
  }
  static bool text(const json* v, std::string& out) {
    if (!v || !v->is_string()) return false;
    out = v->get<std::string>();
    return true;
  }
  static bool strings(const json& a, std::vector<std::string>& out) {
    if (!a.is_array()) return false;
    for (const auto& x : a)
      if (!text(&x, out.emplace_back())) return false;
    return true;
  }

  bool entry(const json& j) {
    if (!j.is_object()) return false;
    const json *config = member(j, "config"), *stats = member(j, "stats"), *meta = member(j, "metadata");
    if (!config || !stats || !meta || !stats->is_object() || !meta->is_object()) return false;
    e_.config = Config::from_json(*config);
    if (!number(member(*stats, "latency_avg_ns"), e_.latency_avg_ns, false) ||
        !number(member(*stats, "latency_median_ns"), e_.latency_median_ns, false) ||
        !number(member(*stats, "latency_std_ns"), e_.latency_std_ns, true) ||
        !number(member(*stats, "compile_time_s"), e_.compile_time_s, true))
      return false;
    const json* samples = member(*meta, "samples_ns");
    if (!samples || !samples->is_array()) return false;
    e_.samples_ns.reserve(samples->size());
    for (const auto& x : *samples) {
      if (!x.is_number()) return false;
      e_.samples_ns.push_back(x.get<double>());
    }
    return text(member(*meta, "benchmarking_method"), e_.benchmarking_method) && text(member(*meta, "run"), e_.run) &&
           text(member(*meta, "tuned_at"), e_.tuned_at) && text(member(*meta, "ktune_version"), e_.ktune_version) &&
           optional_fields(*meta);
  }

  bool optional_fields(const json& meta) {
    if (const json* tp = member(meta, "tp_size")) {
      if (!tp->is_number_integer() || (tp->is_number_unsigned() && tp->get<std::uint64_t>() > INT64_MAX)) return false;
      e_.tp_size = static_cast<int>(tp->get<std::int64_t>());
      std::string dim;
      if (e_.tp_size < 1) return false;
      if (e_.tp_size > 1) {
        if (!text(member(meta, "tp_split_dim"), dim)) return false;
        e_.tp_split_dim = to_string(tp_split_dim_from_string(dim));
      }
    }
    if (const json* v = member(meta, "versions")) {
      if (!v->is_object()) return false;
      for (auto it = v->begin(); it != v->end(); ++it)
        if (!text(&it.value(), e_.versions.emplace_back(it.key(), std::string()).second)) return false;
    }
    if (const json* from = member(meta, "imported_from"); from && !text(from, e_.imported_from)) return false;
    if (const json* by = member(meta, "chosen_by")) e_.chosen_by = chosen_by_from_string(by->get<std::string>());
    if (const json* search = member(meta, "search_median_ns"); search && !number(search, e_.search_median_ns, false))
      return false;
    if (const json* flags = member(meta, "flags")) {
      std::vector<std::string> names;
      if (!strings(*flags, names)) return false;
      e_.flags = WinnerFlags::from_names(names);
    }
    return true;
  }

  RegistryEntry e_;
};

void append_indented(std::string& out, std::string_view text, std::string_view indent) {
  for (std::size_t line = 0, end; line < text.size(); line = end) {
    end = text.find('\n', line);
    end = end == std::string_view::npos ? text.size() : end + 1;
    out += text.substr(line, end - line);
    if (text[end - 1] == '\n') out += indent;
  }
}

// The text of to_json().dump(2) and a newline, one entry at a time: the whole registry as one
// JSON value costs several times the entries themselves to build, dump and free.
std::string registry_text(const Registry& reg) {
  std::string out = "{\n  \"backend\": " + json(reg.backend()).dump() +
                    ",\n  \"device\": " + json(reg.device()).dump() + ",\n  \"entries\": {";
  const char* family_sep = "\n";
  for (const auto& [family, keys] : reg.entries()) {
    out += family_sep;
    family_sep = ",\n";
    out += "    " + json(family).dump() + ": {";
    const char* sep = "\n";
    for (const auto& [key, entry] : keys) {
      out += sep;
      sep = ",\n";
      out += "      " + json(key).dump() + ": ";
      append_indented(out, entry.to_json().dump(2), "      ");
    }
    if (!keys.empty()) out += "\n    ";
    out += "}";
  }
  if (!reg.entries().empty()) out += "\n  ";
  out += "},\n  \"ktune_registry\": " + std::to_string(kRegistryFormat) + "\n}\n";
  return out;
}

// <file>.bak as a second name of the file's contents, without copying them (a registry of 100,000
// entries is ~100 MB, which a copy reads, writes and syncs on every apply). Safe because every
// writer of a registry replaces it by rename (write_file_atomic) and never writes it in place, so
// the old contents stay as they are under the .bak name. A link under a temporary name renamed
// over the .bak replaces it atomically; those a killed saver left are removed first. False where
// links cannot be made (another file system behind a symbolic link, one without hard links): the
// caller copies instead.
bool link_backup(const fs::path& file) {
  const fs::path backup = file.string() + ".bak";
  const fs::path dir = backup.has_parent_path() ? backup.parent_path() : fs::path(".");
  std::string prefix = ".";
  prefix += backup.filename().string();
  prefix += ".tmp.link.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(prefix)) ::unlink(it->path().c_str());
  const fs::path tmp = dir / (prefix + std::to_string(::getpid()));
  // Through a symbolic link to the file it names, as the copy reads it.
  if (::linkat(AT_FDCWD, file.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) return false;
  const bool renamed = ::rename(tmp.c_str(), backup.c_str()) == 0;
  // Also after a rename: between two names of one file (a save killed after its backup) it does
  // nothing and succeeds.
  ::unlink(tmp.c_str());
  return renamed;
}

// A registry file's folder and name must be one path component each.
void check_component(const std::string& what, const std::string& s) {
  if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos || s.find('\\') != std::string::npos)
    throw InputError("registry " + what + " '" + s + "' cannot name a file (empty, '.', '..' or with a slash)");
}

bool has_field(const Problem& p, const std::string& name) {
  for (const auto& [k, v] : p.fields)
    if (k == name) return true;
  return false;
}

// The command that tunes `problem`: a sharded problem is stored by its local shape, but the CLI
// takes the global one plus the sharding, so the split fields are multiplied back (a replicated
// kv head count of 1 becomes tp_size, which gives the same local shape).
std::string tune_command(const std::string& backend, const KernelFamily& family, const Problem& problem) {
  Problem global = problem;
  if (const TpSplit* split = problem.tp_size > 1 ? family.tp_split(problem.tp_split_dim) : nullptr)
    for (const auto& f : split->fields)
      if (has_field(problem, f.name)) global.set(f.name, std::to_string(problem.num(f.name) * problem.tp_size));
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

Config in_order(const Config& config, const std::vector<std::string>& names) {
  Config out;
  for (const auto& name : names)
    if (config.has(name) && !out.has(name)) out.set(name, config.value(name));
  for (const auto& [name, value] : config.values())
    if (!out.has(name)) out.set(name, value);
  return out;
}

}  // namespace

Config in_space_order(const Config& config, const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& p : space.parameters()) names.push_back(p.name);
  return in_order(config, names);
}

Config in_order_of(const Config& config, const Config& like) {
  std::vector<std::string> names;
  for (const auto& [name, value] : like.values()) names.push_back(name);
  return in_order(config, names);
}

json RegistryEntry::to_json() const {
  json j = {{"config", config.to_json()},
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
  json& meta = j["metadata"];
  if (tp_size > 1) {
    meta["tp_size"] = tp_size;
    meta["tp_split_dim"] = tp_split_dim;
  }
  if (!versions.empty()) {
    json v = json::object();
    for (const auto& [k, x] : versions) v[k] = x;
    meta["versions"] = v;
  }
  if (!imported_from.empty()) meta["imported_from"] = imported_from;
  if (search_median_ns > 0) {
    meta["chosen_by"] = to_string(chosen_by);
    meta["search_median_ns"] = search_median_ns;
  }
  if (flags.any()) meta["flags"] = flags.names();
  return j;
}

RegistryEntry RegistryEntry::from_json(const json& j) { return entry_from(JsonPath(j)); }

fs::path Registry::file_for(const fs::path& root, const std::string& backend, const std::string& device_slug) {
  check_component("backend", backend);
  check_component("device slug", device_slug);
  return root / backend / (device_slug + ".json");
}

namespace {

using OldKeys = std::vector<std::tuple<std::string, std::string, RegistryEntry>>;

// Old keys (",tp=N/dim") to the local key, with the setting in the entry's metadata; read after
// the local ones, so a local entry meets its old twin.
void migrate(Registry& reg, OldKeys& old, std::vector<std::string>& migrations) {
  for (auto& [family, key, e] : old) {
    Problem p;
    try {
      p = Problem::from_key(family, key);
    } catch (const InputError& err) {
      throw InputError("entries." + family + "." + key + ": " + err.what());
    }
    e.tp_size = p.tp_size;
    e.tp_split_dim = to_string(p.tp_split_dim);
    const std::string local = p.local_key();
    const RegistryEntry* there = reg.find(family, local);
    std::string note = family + " " + key + " -> " + local + " (tp " + std::to_string(p.tp_size) + "/" +
                       e.tp_split_dim + " in its metadata)";
    if (there && there->latency_median_ns <= e.latency_median_ns) {
      migrations.push_back(note + ": dropped, " + local + " is there and as fast");
      continue;
    }
    if (there) note += ": replaces the slower " + local;
    reg.set(family, local, std::move(e));
    migrations.push_back(note);
  }
}

}  // namespace

Registry Registry::load(const fs::path& file) {
  // A missing file is a registry nobody has written to yet; its name says whose it is.
  if (!fs::exists(file)) return Registry(file.parent_path().filename().string(), file.stem().string());
  const fs::path backup = file.string() + ".bak";
  const std::string advice =
      fs::exists(backup) ? "; fix it, or restore the previous version: cp " + backup.string() + " " + file.string()
                         : "; fix it, or move it away to start an empty registry";
  const std::string origin = "registry " + file.string();
  try {
    // Each entry (entries.<family>.<key>: level 4) becomes a RegistryEntry as soon as it is read,
    // and its JSON is dropped: the whole file as JSON values costs more to build and free than
    // the entries themselves. What is left (the format, backend and device) is read after.
    std::map<std::string, std::map<std::string, RegistryEntry>> entries;
    OldKeys old;
    std::string entry_error;  // the first entry's that does not read: thrown after the file's own
    const auto take = [&](const std::vector<std::string>& keys, json& value) {
      if (keys[0] != "entries") return false;
      if (!entry_error.empty()) return true;
      const std::string &family = keys[1], &key = keys[2];
      std::optional<RegistryEntry> e = QuickEntry::read(value);
      try {
        if (!e) {
          const JsonPath in_family(value, JsonPath(value, "entries").child_path(family));
          e = entry_from(JsonPath(value, in_family.child_path(key)));
        }
      } catch (const InputError& err) {
        entry_error = err.what();
        return true;
      }
      auto& into = entries[family];
      // In the order save writes them (sorted): each goes at the end, without a search.
      if (key.find(",tp=") == std::string::npos)
        into.insert_or_assign(into.end(), key, std::move(*e));
      else
        old.emplace_back(family, key, std::move(*e));
      return true;
    };
    Registry reg = from_json(detail::parse_limited<json>(read_text_file(file, "registry"), origin, take, 4));
    if (!entry_error.empty()) throw InputError(entry_error);
    std::erase_if(entries, [](const auto& family) { return family.second.empty(); });
    reg.entries_ = std::move(entries);  // from_json found every entry taken, or refused the file
    migrate(reg, old, reg.migrations_);
    return reg;
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
  if (fs::exists(file) && !link_backup(file)) write_file_atomic(file.string() + ".bak", read_text_file(file));
  write_file_atomic(file, registry_text(*this));
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

void Registry::check(const KernelFamily& family) const {
  const auto f = entries_.find(family.name);
  if (f == entries_.end()) return;
  for (const auto& [key, e] : f->second)
    family.default_space.check_config(e.config,
                                      "registry " + backend_ + "/" + device_ + ": entry " + family.name + " " + key);
}

namespace {

// The entry's config in the space's order, with parameters it predates taken from the default.
Config completed(const Config& c, const KernelFamily& family) {
  Config out = in_space_order(c, family.default_space);
  for (const auto& [name, v] : family.default_config.values())
    if (!out.has(name)) out.set(name, v);
  return in_space_order(out, family.default_space);
}

// The key of the tuned problem nearest to `problem` along the bucket field, among the entries
// whose other fields are the same: the next tuned value up, else the largest below.
std::string nearest_bucket(const std::map<std::string, RegistryEntry>& keys, const std::string& family,
                           const std::string& field, const Problem& problem) {
  std::int64_t want = 0;
  try {
    want = problem.num(field);
  } catch (const InputError&) {
    return {};  // a text value (not a size) has no bucket
  }
  std::optional<std::pair<std::int64_t, std::string>> above, below;
  for (const auto& [key, e] : keys) {
    Problem p;
    try {
      p = Problem::from_key(family, key);
    } catch (const InputError&) {
      continue;
    }
    if (p.fields.size() != problem.fields.size()) continue;
    bool same = true;
    std::int64_t v = 0;
    for (std::size_t i = 0; i < p.fields.size() && same; ++i) {
      if (p.fields[i].first != problem.fields[i].first)
        same = false;
      else if (p.fields[i].first != field)
        same = p.fields[i].second == problem.fields[i].second;
      else
        try {
          v = p.num(field);
        } catch (const InputError&) {
          same = false;
        }
    }
    if (!same) continue;
    if (v >= want && (!above || v < above->first)) above = {v, key};
    if (v < want && (!below || v > below->first)) below = {v, key};
  }
  return above ? above->second : below ? below->second : std::string();
}

std::string join_versions(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string out;
  for (const auto& [k, x] : v) out += (out.empty() ? "" : ", ") + k + " " + x;
  return out;
}

}  // namespace

LookupResult Registry::lookup(const KernelFamily& family, const Problem& problem, const LookupContext& context) const {
  check(family);
  LookupResult r;
  const std::string key = problem.local_key();
  const std::string backend = backend_.empty() ? family.backend : backend_;
  const std::string where = "the " + backend + "/" + device_ + " registry";
  const std::string command = tune_command(backend, family, problem);
  auto use = [&](const std::string& matched, const RegistryEntry* e, LookupSource source) {
    r.config = completed(e->config, family);
    r.source = source;
    r.matched_key = matched;
    r.entry = e;
    std::vector<std::pair<std::string, std::string>> then, now;
    for (const auto& [k, v] : e->versions)
      for (const auto& [rk, rv] : context.versions)
        if (k == rk && v != rv) then.emplace_back(k, v), now.emplace_back(rk, rv);
    if (!then.empty())
      r.version_warning = family.name + " " + matched + " in " + where + " was measured with " + join_versions(then) +
                          "; this machine runs " + join_versions(now) + ". Tune it again to be sure: " + command;
    return r;
  };
  if (const RegistryEntry* e = find(family.name, key)) return use(key, e, LookupSource::Exact);

  std::string bucket_key;
  const auto f = entries_.find(family.name);
  if (f != entries_.end() && !family.bucket_field.empty() && has_field(problem, family.bucket_field))
    bucket_key = nearest_bucket(f->second, family.name, family.bucket_field, problem);
  if (!bucket_key.empty()) {
    use(bucket_key, find(family.name, bucket_key), LookupSource::Bucket);
    r.warning = "no tuned config for " + family.name + " " + key + " in " + where + "; using the nearest tuned one, " +
                bucket_key + ". Tune this shape with: " + command;
    return r;
  }

  // The family default: aiter's most common best config, if the family's constraints allow it
  // for this problem on this device; else the family's own default, else its first valid config.
  Variables vars = context.device;
  std::string unchecked = context.device.empty() ? "its properties are unknown here" : "";
  if (unchecked.empty()) {
    try {
      for (const auto& [k, v] : family.variables(problem)) vars[k] = v;
      // A property the constraints read but the device lacks would prune every config.
      if (const auto issues = family.default_space.check(vars); !issues.empty()) unchecked = issues.front().message;
    } catch (const InputError& e) {
      unchecked = e.what();
    }
  }
  const bool checkable = unchecked.empty();
  auto allowed = [&](const Config& c) {
    if (!checkable) return true;
    try {
      return !family.default_space.violated(completed(c, family), vars).has_value();
    } catch (const InputError&) {
      return false;  // a constraint that cannot be evaluated for it does not allow it
    }
  };
  std::string origin = "the most common best config of " + where;
  std::optional<Config> pick = most_common(family.name, allowed);
  if (!pick && allowed(family.default_config)) {
    pick = family.default_config;
    origin = "the family's default config";
  }
  if (!pick && checkable) {
    try {
      const auto valid = family.default_space.enumerate(vars);
      if (!valid.empty()) pick = valid.front(), origin = "the first config the family's constraints allow";
    } catch (const InputError&) {
    }
  }
  if (!pick) pick = family.default_config, origin = "the family's default config (which its constraints prune here)";
  r.config = completed(*pick, family);
  r.source = LookupSource::Default;
  r.warning = "no tuned config for " + family.name + " " + key + " nor a tuned bucket of " +
              (family.bucket_field.empty() ? std::string("it") : family.bucket_field) + " in " + where + "; using " +
              origin + ", " + r.config.key() +
              (checkable ? "" : " (not checked against the device's constraints: " + unchecked + ")") +
              ". Tune it with: " + command;
  return r;
}

json Registry::to_json() const {
  json entries = json::object();
  for (const auto& [family, keys] : entries_) {
    json f = json::object();
    for (const auto& [key, entry] : keys) f[key] = entry.to_json();
    entries[family] = std::move(f);  // a copy would cost as much as the building
  }
  json j = {{"ktune_registry", kRegistryFormat}, {"backend", backend_}, {"device", device_}};
  j["entries"] = std::move(entries);
  return j;
}

Registry Registry::from_json(const json& j) {
  const JsonPath root(j);
  if (!root.has("ktune_registry")) root.fail("not a ktune registry (no \"ktune_registry\" field)");
  const std::int64_t format = root["ktune_registry"].integer();
  if (format != kRegistryFormat)
    root["ktune_registry"].fail("registry format " + std::to_string(format) +
                                " is not supported by this ktune (it reads " + std::to_string(kRegistryFormat) + ")");
  Registry reg(root["backend"].string(), root["device"].string());
  OldKeys old;
  root["entries"].for_each_member([&](const std::string& family, const JsonPath& keys) {
    auto& entries = reg.entries_[family];
    for (auto it = keys.object().begin(); it != keys.object().end(); ++it) {
      std::optional<RegistryEntry> e = QuickEntry::read(it.value());
      if (!e) e = entry_from(JsonPath(it.value(), keys.child_path(it.key())));
      // Keys come sorted (nlohmann's objects are maps): each goes at the end, without a search.
      if (it.key().find(",tp=") == std::string::npos)
        entries.insert_or_assign(entries.end(), it.key(), std::move(*e));
      else
        old.emplace_back(family, it.key(), std::move(*e));
    }
    if (entries.empty()) reg.entries_.erase(family);
  });
  migrate(reg, old, reg.migrations_);
  return reg;
}

}  // namespace ktune
