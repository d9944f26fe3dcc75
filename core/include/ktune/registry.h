#pragma once
// Registry: tuned_data/<backend>/<device-slug>.json, the best config per family and problem
// key, read by serving code at run time. Lookup falls back from the exact key to the
// power-of-two bucket of the family's bucket field (M, batch), then to the family default.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/config.h"
#include "ktune/problem.h"
#include "ktune/search_space.h"

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

  nlohmann::json to_json() const;
  static RegistryEntry from_json(const nlohmann::json& j);  // throws InputError
};

enum class LookupSource { Exact, Bucket, Default };

struct LookupResult {
  Config config;
  LookupSource source = LookupSource::Default;
  std::string matched_key;  // the registry key used (exact or bucket)
  std::string warning;      // non-empty unless exact: names the missing key and the tune command
  const RegistryEntry* entry = nullptr;  // null for the default
};

// `config` with its parameters in the space's order (JSON objects, as in the registry and
// results.json, do not keep it); parameters the space lacks follow in their own order.
Config in_space_order(const Config& config, const SearchSpace& space);

class Registry {
 public:
  Registry() = default;
  Registry(std::string backend, std::string device_slug) : backend_(std::move(backend)), device_(std::move(device_slug)) {}

  // tuned_data/<backend>/<device-slug>.json
  static std::filesystem::path file_for(const std::filesystem::path& root, const std::string& backend,
                                        const std::string& device_slug);
  // A missing file is an empty registry; a malformed one is an InputError naming the file.
  static Registry load(const std::filesystem::path& file);
  // Atomic (temp file, fsync, rename); the previous file is kept as <file>.bak.
  void save(const std::filesystem::path& file) const;

  const std::string& backend() const { return backend_; }
  const std::string& device() const { return device_; }
  // family -> problem key -> entry
  const std::map<std::string, std::map<std::string, RegistryEntry>>& entries() const { return entries_; }
  const RegistryEntry* find(const std::string& family, const std::string& problem_key) const;
  void set(const std::string& family, const std::string& problem_key, RegistryEntry entry);
  std::size_t size() const;

  // Exact key, else the bucket (bucket field rounded up to a power of two), else the default.
  // The config comes back in the order of the family's default space.
  LookupResult lookup(const KernelFamily& family, const Problem& problem) const;

  nlohmann::json to_json() const;
  static Registry from_json(const nlohmann::json& j);  // throws InputError

 private:
  std::string backend_, device_;
  std::map<std::string, std::map<std::string, RegistryEntry>> entries_;
};

}  // namespace ktune
