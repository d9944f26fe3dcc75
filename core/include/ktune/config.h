#pragma once
// A Config is one point of a SearchSpace: a value for every parameter, in the space's order.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/param_value.h"

namespace ktune {

class Config {
 public:
  Config() = default;
  explicit Config(std::vector<std::pair<std::string, ParamValue>> values) : values_(std::move(values)) {}

  const std::vector<std::pair<std::string, ParamValue>>& values() const { return values_; }
  bool has(const std::string& name) const;
  // Throws InputError naming the parameter when it is absent.
  const ParamValue& value(const std::string& name) const;
  // The value as an integer (booleans 0/1): sizes and counts. Throws InputError naming the
  // parameter when it is absent or a string.
  std::int64_t get(const std::string& name) const;
  std::int64_t get_or(const std::string& name, std::int64_t fallback) const;
  void set(const std::string& name, ParamValue value);
  bool empty() const { return values_.empty(); }

  // "BM=64,BN=128,stages=3,permute_x=true,cache_modifier=.cg": stable, human readable;
  // identifies a config within a run (ParamValue::text() spells each value).
  std::string key() const;
  static Config from_key(const std::string& key);  // throws InputError

  nlohmann::json to_json() const;                    // {"BM":64,"permute_x":true,...} in order
  static Config from_json(const nlohmann::json& j);  // throws InputError

  friend bool operator==(const Config&, const Config&) = default;
  // The same values for the same parameters, in whatever order (a registry keeps its own).
  bool same_values(const Config& other) const;

 private:
  std::vector<std::pair<std::string, ParamValue>> values_;
};

}  // namespace ktune
