#include "ktune/device.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "json_path.h"
#include "ktune/error.h"

namespace ktune {

std::string slugify(const std::string& s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::string DeviceInfo::slug() const { return slugify(name); }

double DeviceInfo::property(const std::string& key, double fallback) const {
  auto it = properties.find(key);
  return it == properties.end() ? fallback : it->second;
}

nlohmann::json DeviceInfo::to_json() const {
  return {{"backend", backend}, {"index", index},           {"name", name},
          {"slug", slug()},     {"properties", properties}, {"text", text}};
}

DeviceInfo DeviceInfo::from_json(const nlohmann::json& j) {
  const detail::JsonPath root(j);
  DeviceInfo d;
  d.backend = root["backend"].string();
  d.index = root.has("index") ? static_cast<int>(root["index"].integer()) : 0;
  d.name = root["name"].string();
  if (const auto props = root.find("properties"))
    props->for_each_member([&](const std::string& k, const detail::JsonPath& v) { d.properties[k] = v.number(); });
  if (const auto text = root.find("text"))
    text->for_each_member([&](const std::string& k, const detail::JsonPath& v) { d.text[k] = v.string(); });
  return d;
}

}  // namespace ktune
