#include "ktune/config.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune {

bool Config::has(const std::string& name) const {
  for (const auto& [k, v] : values_)
    if (k == name) return true;
  return false;
}

ParamValue Config::get(const std::string& name) const {
  for (const auto& [k, v] : values_)
    if (k == name) return v;
  throw InputError("config " + key() + " has no parameter '" + name + "'");
}

ParamValue Config::get_or(const std::string& name, ParamValue fallback) const {
  for (const auto& [k, v] : values_)
    if (k == name) return v;
  return fallback;
}

void Config::set(const std::string& name, ParamValue value) {
  for (auto& [k, v] : values_)
    if (k == name) {
      v = value;
      return;
    }
  values_.emplace_back(name, value);
}

std::string Config::key() const {
  std::string out;
  for (const auto& [k, v] : values_) {
    if (!out.empty()) out += ',';
    out += k + '=' + std::to_string(v);
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
    ParamValue value = 0;
    const char* last = item.data() + item.size();
    std::from_chars_result parsed{};
    if (eq != std::string::npos) parsed = std::from_chars(item.data() + eq + 1, last, value);
    if (eq == std::string::npos || eq == 0 || parsed.ec != std::errc{} || parsed.ptr != last)
      throw InputError("malformed config key '" + key + "': expected NAME=INTEGER pairs separated by commas");
    c.values_.emplace_back(item.substr(0, eq), value);
    pos = end + 1;
  }
  return c;
}

nlohmann::json Config::to_json() const {
  // An array of pairs would keep order but read badly; ordered keys are restored from the space.
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values_) j[k] = v;
  return j;
}

Config Config::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("a config must be a JSON object of parameter: integer, got " + json_excerpt(j));
  Config c;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_integer())
      throw InputError("config parameter '" + k + "' must be an integer, got " + json_excerpt(v));
    c.values_.emplace_back(k, v.get<ParamValue>());
  }
  return c;
}

}  // namespace ktune
