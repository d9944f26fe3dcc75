#include "ktune/config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "config_json.h"
#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune {

bool Config::has(const std::string& name) const {
  for (const auto& [k, v] : values_)
    if (k == name) return true;
  return false;
}

const ParamValue& Config::value(const std::string& name) const {
  for (const auto& [k, v] : values_)
    if (k == name) return v;
  throw InputError("config " + key() + " has no parameter '" + name + "'");
}

std::int64_t Config::get(const std::string& name) const { return value(name).as_int("parameter '" + name + "'"); }

std::int64_t Config::get_or(const std::string& name, std::int64_t fallback) const {
  return has(name) ? get(name) : fallback;
}

void Config::set(const std::string& name, ParamValue value) {
  for (auto& [k, v] : values_)
    if (k == name) {
      v = std::move(value);
      return;
    }
  values_.emplace_back(name, std::move(value));
}

bool Config::same_values(const Config& other) const {
  auto x = values_, y = other.values_;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

std::string Config::key() const {
  std::string out;
  for (const auto& [k, v] : values_) {
    if (!out.empty()) out += ',';
    out += k + '=' + v.text();
  }
  return out;
}

Config Config::from_key(const std::string& key) {
  Config c;
  std::size_t pos = 0;
  while (pos < key.size()) {
    std::size_t end = key.find(',', pos);
    if (end == std::string::npos) end = key.size();
    const std::string item = key.substr(pos, end - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("malformed config key '" + key + "': expected NAME=VALUE pairs separated by commas");
    c.values_.emplace_back(item.substr(0, eq), ParamValue::parse(std::string_view(item).substr(eq + 1)));
    pos = end + 1;
  }
  return c;
}

nlohmann::json Config::to_json() const {
  // An array of pairs would keep order but read badly; ordered keys are restored from the space.
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values_) j[k] = v.to_json();
  return j;
}

Config Config::from_json(const nlohmann::json& j) { return detail::config_from_json(j); }

}  // namespace ktune
