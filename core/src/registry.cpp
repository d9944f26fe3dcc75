#include "ktune/registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/kernel_family.h"
#include "ktune/run_store.h"
#include "registry_text.h"

namespace ktune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
  // A worker's family is tuned through its worker, which the registry does not know.
  const std::string with = family.source == "worker" ? " --worker \"<its worker's command>\"" : " --backend " + backend;
  std::string cmd = "ktune tune " + family.name + with + " --shape \"" + shape + "\"";
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
  if (!measured()) j["stats"] = json::object();
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
  if (!conditions.empty()) j["conditions"] = conditions;
  return j;
}

fs::path Registry::file_for(const fs::path& root, const std::string& backend, const std::string& device_slug) {
  check_component("backend", backend);
  check_component("device slug", device_slug);
  return root / backend / (device_slug + ".json");
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

void Registry::set_family_description(const std::string& family, json description) {
  family_descriptions_[family] = std::move(description);
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

// The keys of the tuned problems whose other fields are those of `problem`, nearest first along
// the bucket field: the tuned values above it upwards, then those below it downwards.
std::vector<std::string> nearest_buckets(const std::map<std::string, RegistryEntry>& keys, const std::string& family,
                                         const std::string& field, const Problem& problem) {
  std::int64_t want = 0;
  try {
    want = problem.num(field);
  } catch (const InputError&) {
    return {};  // a text value (not a size) has no bucket
  }
  std::vector<std::pair<std::int64_t, std::string>> above, below;
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
    if (same) (v >= want ? above : below).emplace_back(v, key);
  }
  std::sort(above.begin(), above.end());
  std::sort(below.rbegin(), below.rend());
  std::vector<std::string> out;
  for (const auto* side : {&above, &below})
    for (const auto& [v, key] : *side) out.push_back(key);
  return out;
}

// The family's constraints for one problem on the serving device, where its properties are known.
class ProblemConstraints {
 public:
  ProblemConstraints(const KernelFamily& family, const Problem& problem, const Variables& device)
      : family_(family), launch_(family.default_space.parameters(), family.launch_limits), vars_(device) {
    if (device.empty()) {
      unchecked_ = "its properties are unknown here";
      return;
    }
    try {
      for (const auto& [k, v] : family.variables(problem)) vars_[k] = v;
      // A property the constraints read but the device lacks would prune every config.
      if (const auto issues = family.default_space.check(vars_); !issues.empty()) unchecked_ = issues.front().message;
    } catch (const InputError& e) {
      unchecked_ = e.what();
    }
  }
  bool checkable() const { return unchecked_.empty(); }
  const Variables& vars() const { return vars_; }
  // Why the constraints do not allow `c` here; nothing where they do or cannot be checked.
  std::optional<std::string> ruled_out(const Config& c) const { return violated(family_.default_space, c); }
  // Why `c` cannot launch here (the spec's derived limits: shared memory, threads, clusters).
  std::optional<std::string> cannot_launch(const Config& c) const { return violated(launch_, c); }
  // For a warning: that the pick was not checked, and why; empty where it was.
  std::string not_checked() const {
    return checkable() ? "" : " (not checked against the device's constraints: " + unchecked_ + ")";
  }

 private:
  std::optional<std::string> violated(const SearchSpace& space, const Config& c) const {
    if (!checkable()) return std::nullopt;
    try {
      return space.violated(completed(c, family_), vars_);
    } catch (const InputError& e) {
      return std::string(e.what());  // a constraint that cannot be evaluated for it does not allow it
    }
  }

  const KernelFamily& family_;
  const SearchSpace launch_;  // the family's parameters under its launch limits alone
  Variables vars_;
  std::string unchecked_;
};

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

  // Another shape's config, checked against the family's constraints for this problem on this
  // device where the device is known. A bucket's config that cannot launch here is passed over; one
  // the space's other constraints prune here (most of them steer the search: tile sizes for M, ring
  // depths) is used, and the warning names the constraint.
  const ProblemConstraints constraints(family, problem, context.device);
  auto allowed = [&](const Config& c) { return !constraints.ruled_out(c).has_value(); };
  const std::string not_checked = constraints.not_checked();
  std::string passed_over;  // the nearer buckets' keys and why they were not used
  const auto f = entries_.find(family.name);
  if (f != entries_.end() && !family.bucket_field.empty() && has_field(problem, family.bucket_field))
    for (const std::string& bucket_key : nearest_buckets(f->second, family.name, family.bucket_field, problem)) {
      const RegistryEntry* e = find(family.name, bucket_key);
      if (const auto why = constraints.cannot_launch(e->config)) {
        passed_over += "; passed over " + bucket_key + ", whose config cannot launch here (" + *why + ")";
        continue;
      }
      const auto pruned = constraints.ruled_out(e->config);
      use(bucket_key, e, LookupSource::Bucket);
      r.warning = "no tuned config for " + family.name + " " + key + " in " + where + "; using the nearest tuned one" +
                  (passed_over.empty() ? "" : " that can launch") + ", " + bucket_key + not_checked +
                  (pruned ? " (its config is outside the space a tune of this shape searches: " + *pruned + ")" : "") +
                  passed_over + ". Tune this shape with: " + command;
      return r;
    }

  // The family default: aiter's most common best config, if the family's constraints allow it
  // for this problem on this device; else the family's own default, else its first valid config.
  std::string origin = "the most common best config of " + where;
  std::optional<Config> pick = most_common(family.name, allowed);
  if (!pick && allowed(family.default_config)) {
    pick = family.default_config;
    origin = "the family's default config";
  }
  if (!pick && constraints.checkable()) {
    try {
      const auto valid = family.default_space.enumerate(constraints.vars());
      if (!valid.empty()) pick = valid.front(), origin = "the first config the family's constraints allow";
    } catch (const InputError&) {
    }
  }
  if (!pick) pick = family.default_config, origin = "the family's default config (which its constraints prune here)";
  r.config = completed(*pick, family);
  r.source = LookupSource::Default;
  r.warning = "no tuned config for " + family.name + " " + key + " nor a tuned bucket of " +
              (family.bucket_field.empty() ? std::string("it") : family.bucket_field) +
              (passed_over.empty() ? "" : " that can launch") + " in " + where + "; using " + origin + ", " +
              r.config.key() + not_checked + passed_over + ". Tune it with: " + command;
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
  if (!family_descriptions_.empty()) j["families"] = family_descriptions_;
  return j;
}

}  // namespace ktune
