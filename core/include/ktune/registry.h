#pragma once
// Registry: tuned_data/<backend>/<device-slug>.json, the best config per family and problem
// key, read by serving code at run time. Keys are the local (per-device) shape; tensor-parallel
// settings are metadata. Lookup falls back as aiter's users know: the exact key, else the nearest
// tuned bucket of the family's bucket field (M, batch: rounded up to the next tuned value, else
// the largest tuned one below), else the family default: the most common best config among the
// device's entries that satisfies the family's constraints there.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/conditions.h"
#include "ktune/config.h"
#include "ktune/problem.h"
#include "ktune/search_space.h"
#include "ktune/winner.h"

namespace ktune {

struct KernelFamily;

struct RegistryEntry {
  Config config;
  double latency_avg_ns = 0;
  double latency_median_ns = 0;
  double latency_std_ns = 0;
  double compile_time_s = 0;
  std::string benchmarking_method;
  std::vector<double> samples_ns;
  std::string run;
  std::string tuned_at;
  std::string ktune_version;
  // The tensor-parallel setting it was tuned under (the key is the local shape either way).
  int tp_size = 1;
  std::string tp_split_dim;  // "out" | "in" when tp_size > 1
  // Driver, toolkit and compiler versions it was measured with (the backend's versions()).
  std::vector<std::pair<std::string, std::string>> versions;
  std::string imported_from;  // "tpu-inference FILE" for an imported entry
  // Which measurement the latencies and samples above are (the winner's paired re-measure, or
  // the search's own timing), the search's median beside them, and what made the number doubtful
  // (ResultEntry::choice). Older entries and imports: chosen by search, search median 0.
  ChosenBy chosen_by = ChosenBy::Search;
  double search_median_ns = 0;
  WinnerFlags flags;
  // The device's conditions (conditions.h: SM clock, power, clock limited) while the latencies
  // and samples above were measured: the run's ResultEntry::conditions, kept so that a later
  // number is read beside the clock this one was taken at. Empty: not read (older entries,
  // imports, devices without NVML). The file holds them as "conditions" beside "stats".
  Conditions conditions;

  // An entry without a measurement: a config another tool ships without stats (tpu-inference
  // keeps most of its configs so). Its latencies are 0 and it has no samples; the file holds
  // "stats": {}. Diff and apply class it "unmeasured": nothing says whether a run is faster.
  bool measured() const { return latency_median_ns > 0; }

  nlohmann::json to_json() const;
  static RegistryEntry from_json(const nlohmann::json& j);  // throws InputError
};

enum class LookupSource { Exact, Bucket, Default };

struct LookupResult {
  Config config;
  LookupSource source = LookupSource::Default;
  std::string matched_key;  // the registry key used (exact or bucket)
  std::string warning;      // non-empty unless exact: names the missing key and the tune command
  // Non-empty when the entry was measured with other driver / toolkit / compiler versions than
  // the running ones (LookupContext::versions): names them and the command that tunes again.
  std::string version_warning;
  const RegistryEntry* entry = nullptr;  // null for the default
};

// What lookup knows of the machine it serves on. Both may be empty: without device properties
// the family default is not checked against the device constraints (the warning says so).
struct LookupContext {
  Variables device;  // DeviceInfo::variables(): cc_major, smem_per_block_optin, ...
  std::vector<std::pair<std::string, std::string>> versions;  // Backend::versions()
};

// `config` with its parameters in the space's order (JSON objects, as in the registry and
// results.json, do not keep it); parameters the space lacks follow in their own order.
Config in_space_order(const Config& config, const SearchSpace& space);
// `config` with the parameters `like` has in like's order, the others after: a registry entry's
// config beside a run's, read side by side.
Config in_order_of(const Config& config, const Config& like);

class Registry {
 public:
  Registry() = default;
  Registry(std::string backend, std::string device_slug)
      : backend_(std::move(backend)), device_(std::move(device_slug)) {}

  // tuned_data/<backend>/<device-slug>.json
  static std::filesystem::path file_for(const std::filesystem::path& root, const std::string& backend,
                                        const std::string& device_slug);
  // A missing file is an empty registry; a malformed one is an InputError naming the file.
  // Keys of older files with ",tp=N/out" are migrated to the local key with the setting in the
  // entry's metadata (migrations() says which; the next save writes them so).
  static Registry load(const std::filesystem::path& file);
  // load's reading of a file's text, `origin` naming the file in errors: through ktune's own JSON
  // reader, or with `nlohmann_reader` through nlohmann's, which every other file goes through
  // (the tests and tests/fuzz/fuzz_json_readers hold the two to the same results).
  static Registry from_text(std::string_view text, const std::string& origin, bool nlohmann_reader = false);
  // Atomic (temp file, fsync, rename); the previous file is kept as <file>.bak.
  void save(const std::filesystem::path& file) const;

  const std::string& backend() const { return backend_; }
  const std::string& device() const { return device_; }
  // family -> problem key -> entry
  const std::map<std::string, std::map<std::string, RegistryEntry>>& entries() const { return entries_; }
  const RegistryEntry* find(const std::string& family, const std::string& problem_key) const;
  void set(const std::string& family, const std::string& problem_key, RegistryEntry entry);
  std::size_t size() const;
  // One line per key migrated on read (old ",tp=" keys), for the CLI to print.
  const std::vector<std::string>& migrations() const { return migrations_; }
  // Descriptions of families whose kernels a ktune build need not have (a worker's), by family
  // name: the family as the run that tuned it recorded it (family_description.h), kept in the
  // file's "families" so that lookup and export find the family from the registry alone.
  const std::map<std::string, nlohmann::json>& family_descriptions() const { return family_descriptions_; }
  void set_family_description(const std::string& family, nlohmann::json description);

  // Throws InputError naming the entry (family, key) and the parameter when an entry of
  // `family` has a parameter the family's space lacks, or a value of another kind.
  void check(const KernelFamily& family) const;
  // The most common best config among `family`'s entries, ties broken by config key; with
  // `accept`, the most common one it accepts. nullopt when none.
  template <typename Accept>
  std::optional<Config> most_common(const std::string& family, Accept&& accept) const;

  // Exact key (Problem::local_key), else the nearest tuned bucket, else the family default (see
  // the top of this file). Checks the family's entries first (check()). The config comes back
  // in the order of the family's default space, parameters an older entry lacks taken from the
  // family's default config.
  LookupResult lookup(const KernelFamily& family, const Problem& problem, const LookupContext& context = {}) const;

  nlohmann::json to_json() const;
  static Registry from_json(const nlohmann::json& j);  // throws InputError

 private:
  std::string backend_, device_;
  std::map<std::string, std::map<std::string, RegistryEntry>> entries_;
  std::map<std::string, nlohmann::json> family_descriptions_;
  std::vector<std::string> migrations_;
};

template <typename Accept>
std::optional<Config> Registry::most_common(const std::string& family, Accept&& accept) const {
  const auto f = entries_.find(family);
  if (f == entries_.end()) return std::nullopt;
  std::map<std::string, std::pair<int, const Config*>> counts;  // config key -> (count, config)
  for (const auto& [key, e] : f->second) {
    auto& slot = counts[e.config.key()];
    ++slot.first;
    slot.second = &e.config;
  }
  std::vector<std::pair<int, const Config*>> order;
  for (const auto& [key, c] : counts) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [n, c] : order)
    if (accept(*c)) return *c;
  return std::nullopt;
}

}  // namespace ktune
