#include "ktune/registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "conditions_json.h"
#include "config_json.h"
#include "json_flat.h"
#include "json_limited.h"
#include "json_path.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "registry_text.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::BasicJsonPath;
using detail::FlatJson;
using detail::FlatNode;
using detail::JsonPath;
using nlohmann::json;

namespace {

// The one reading of an entry: from nlohmann's values (RegistryEntry::from_json, from_json) and
// from flat ones (from_text's, built from the tokenizer's events).
template <class J>
RegistryEntry entry_from(const BasicJsonPath<J>& p) {
  using Path = BasicJsonPath<J>;
  RegistryEntry e;
  e.config = p["config"].parse([](const J& c) { return detail::config_from_json(c); });
  const Path stats = p["stats"];
  // Latencies decide what apply keeps: a zero, negative or infinite one would beat or block
  // every real measurement of its key. No stats at all is an unmeasured entry.
  if (!stats.object().empty()) {
    e.latency_avg_ns = stats["latency_avg_ns"].positive_number();
    e.latency_median_ns = stats["latency_median_ns"].positive_number();
    e.latency_std_ns = stats["latency_std_ns"].non_negative_number();
    e.compile_time_s = stats["compile_time_s"].non_negative_number();
  }
  e.conditions = detail::conditions_from(p);
  const Path meta = p["metadata"];
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
    v->for_each_member([&](const std::string& k, const Path& x) { e.versions.emplace_back(k, x.string()); });
  e.imported_from = meta.string_or("imported_from", "");
  if (const auto by = meta.find("chosen_by")) {
    const std::string name = by->string();
    e.chosen_by = by->parse([&](const J&) { return chosen_by_from_string(name); });
  }
  if (const auto search = meta.find("search_median_ns")) e.search_median_ns = search->positive_number();
  if (const auto flags = meta.find("flags")) {
    std::vector<std::string> names;
    flags->for_each_element([&](const Path& f) { names.push_back(f.string()); });
    e.flags = flags->parse([&](const J&) { return WinnerFlags::from_names(names); });
  }
  return e;
}

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

// The tokenizer's events of a registry file: each entry (a container at entries.<family>.<key>,
// held by objects) is built flat and handed to take(family, key, root) as it ends, `root` holding
// it under the objects that lead to it, so that its errors name their path; the rest (format,
// backend, device, and what is no entry, for from_json to judge) goes to LimitedBuilder. Hands
// over what LimitedBuilder's own hand-off at level 4 does (from_text's nlohmann route, which
// fuzz_json_readers holds this one to), under the same depth limit.
template <class Take>
class EntrySplitter {
 public:
  EntrySplitter(detail::LimitedBuilder<json>& rest, Take take) : rest_(rest), take_(std::move(take)) {}

  bool null() { return in_entry() ? (doc_.null(), true) : (flush_key(), rest_.null()); }
  bool boolean(bool v) { return in_entry() ? (doc_.boolean(v), true) : (flush_key(), rest_.boolean(v)); }
  bool number_integer(std::int64_t v) {
    return in_entry() ? (doc_.integer(v), true) : (flush_key(), rest_.number_integer(v));
  }
  bool number_unsigned(std::uint64_t v) {
    return in_entry() ? (doc_.unsigned_integer(v), true) : (flush_key(), rest_.number_unsigned(v));
  }
  bool number_float(double v, const std::string& text) {
    return in_entry() ? (doc_.floating(v), true) : (flush_key(), rest_.number_float(v, text));
  }
  bool string(std::string& v) { return in_entry() ? (doc_.string(v), true) : (flush_key(), rest_.string(v)); }
  bool start_object(std::size_t n) {
    return start(true, [&] { return rest_.start_object(n); });
  }
  bool start_array(std::size_t n) {
    return start(false, [&] { return rest_.start_array(n); });
  }
  bool end_object() {
    return end([&] { return rest_.end_object(); });
  }
  bool end_array() {
    return end([&] { return rest_.end_array(); });
  }
  bool key(std::string& k) {
    if (in_entry()) {
      doc_.key(k);
      return true;
    }
    if (outer_.size() <= keys_.size()) keys_[outer_.size() - 1] = k;
    // An entry's key waits for its value: an entry is not LimitedBuilder's to hold.
    pending_key_ = outer_.size() == keys_.size();
    return pending_key_ || rest_.key(k);
  }

 private:
  bool in_entry() const { return doc_.depth() > 0; }
  void flush_key() {
    if (pending_key_) rest_.key(keys_.back());
    pending_key_ = false;
  }
  template <class Forward>
  bool start(bool object, Forward&& forward) {
    if (in_entry()) {
      if (doc_.depth() >= static_cast<std::size_t>(kMaxJsonDepth)) return false;
    } else if (pending_key_ && keys_[0] == "entries" &&
               std::find(outer_.begin(), outer_.end(), false) == outer_.end()) {
      pending_key_ = false;
      doc_.clear();
      for (const std::string& k : keys_) {
        doc_.open(true);
        doc_.key(k);
      }
    } else {
      flush_key();
      if (!forward()) return false;
      outer_.push_back(object);
      return true;
    }
    doc_.open(object);
    return true;
  }
  template <class Forward>
  bool end(Forward&& forward) {
    if (!in_entry()) {
      outer_.pop_back();
      return forward();
    }
    doc_.close();
    if (doc_.depth() == keys_.size()) {
      while (in_entry()) doc_.close();
      take_(keys_[1], keys_[2], doc_.root());
    }
    return true;
  }

  detail::LimitedBuilder<json>& rest_;
  Take take_;
  FlatJson doc_;                     // the entry being read
  std::vector<bool> outer_;          // whether each container open in rest_ is an object
  std::array<std::string, 3> keys_;  // the last key read at each of the first three levels
  bool pending_key_ = false;         // keys_[2] read, not yet given to rest_
};

// Into `entries`, or `old` for an old key (migrate's).
void keep(std::map<std::string, RegistryEntry>& entries, OldKeys& old, const std::string& family,
          const std::string& key, RegistryEntry e) {
  // In the order save writes them (sorted): each goes at the end, without a search.
  if (key.find(",tp=") == std::string::npos)
    entries.insert_or_assign(entries.end(), key, std::move(e));
  else
    old.emplace_back(family, key, std::move(e));
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
  const auto take = [&](const std::string& family, const std::string& key, const auto& read) {
    if (!entry_error.empty()) return;
    try {
      RegistryEntry e = read();
      keep(entries[family], old, family, key, std::move(e));
    } catch (const InputError& err) {
      entry_error = err.what();
    }
  };
  json rest;
  if (nlohmann_reader) {
    rest = detail::parse_limited<json>(
        text, origin,
        [&](const std::vector<std::string>& keys, json& value) {
          if (keys[0] != "entries") return false;
          take(keys[1], keys[2], [&] {
            std::string label = "entries";
            JsonPath::append_key(label, keys[1]);
            JsonPath::append_key(label, keys[2]);
            return entry_from(JsonPath(value, std::move(label)));
          });
          return true;
        },
        4);
  } else {
    detail::LimitedBuilder<json> builder(rest);
    EntrySplitter splitter(builder, [&](const std::string& family, const std::string& key, const FlatNode& root) {
      take(family, key, [&] { return entry_from(BasicJsonPath<FlatNode>(root)["entries"][family][key]); });
    });
    detail::read_fast<json>(text, origin, splitter);
  }
  Registry reg = from_json(rest);
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
    keys.for_each_member(
        [&](const std::string& key, const JsonPath& e) { keep(entries, old, family, key, entry_from(e)); });
    if (entries.empty()) reg.entries_.erase(family);
  });
  if (const auto families = root.find("families"))
    families->for_each_member(
        [&](const std::string& family, const JsonPath& d) { reg.family_descriptions_[family] = d.object(); });
  migrate(reg, old, reg.migrations_);
  return reg;
}

}  // namespace ktune
