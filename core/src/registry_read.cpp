#include "ktune/registry.h"

#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "json_limited.h"
#include "json_path.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "registry_text.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::JsonPath;
using nlohmann::json;

namespace {

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

RegistryEntry RegistryEntry::from_json(const json& j) { return entry_from(JsonPath(j)); }

Registry Registry::load(const fs::path& file) {
  // A missing file is a registry nobody has written to yet; its name says whose it is.
  if (!fs::exists(file)) return Registry(file.parent_path().filename().string(), file.stem().string());
  const fs::path backup = file.string() + ".bak";
  const std::string advice =
      fs::exists(backup) ? "; fix it, or restore the previous version: cp " + backup.string() + " " + file.string()
                         : "; fix it, or move it away to start an empty registry";
  const std::string origin = "registry " + file.string();
  try {
    return from_text(read_text_file(file, "registry"), origin);
  } catch (const InputError& e) {
    const std::string what = e.what();
    // Errors of the parse already name the file; those of the fields do not.
    throw InputError((what.rfind(origin, 0) == 0 ? what : origin + ": " + what) + advice);
  }
}

Registry Registry::from_text(std::string_view text, const std::string& origin, bool nlohmann_reader) {
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
  Registry reg = from_json(nlohmann_reader ? detail::parse_limited<json>(text, origin, take, 4)
                                           : detail::parse_limited_fast<json>(text, origin, take, 4));
  if (!entry_error.empty()) throw InputError(entry_error);
  std::erase_if(entries, [](const auto& family) { return family.second.empty(); });
  reg.entries_ = std::move(entries);  // from_json found every entry taken, or refused the file
  migrate(reg, old, reg.migrations_);
  return reg;
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
