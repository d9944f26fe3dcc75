#pragma once
// A Config is one point of a SearchSpace: a value for every parameter, in the space's order.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

using ParamValue = std::int64_t;

class Config {
 public:
  Config() = default;
  explicit Config(std::vector<std::pair<std::string, ParamValue>> values) : values_(std::move(values)) {}

  const std::vector<std::pair<std::string, ParamValue>>& values() const { return values_; }
  bool has(const std::string& name) const;
  // Throws InputError naming the parameter when it is absent.
  ParamValue get(const std::string& name) const;
  ParamValue get_or(const std::string& name, ParamValue fallback) const;
  void set(const std::string& name, ParamValue value);
  bool empty() const { return values_.empty(); }

  // "BM=64,BN=128,stages=3": stable, human readable; identifies a config within a run.
  std::string key() const;
  static Config from_key(const std::string& key);  // throws InputError

  nlohmann::json to_json() const;                   // {"BM":64,...} in order
  static Config from_json(const nlohmann::json& j);  // throws InputError

  friend bool operator==(const Config&, const Config&) = default;

 private:
  std::vector<std::pair<std::string, ParamValue>> values_;
};

}  // namespace ktune
