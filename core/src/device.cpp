#include "ktune/device.h"

#include <cctype>
#include <nlohmann/json.hpp>

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
  return {{"backend", backend}, {"index", index}, {"name", name}, {"slug", slug()},
          {"properties", properties}, {"text", text}};
}

DeviceInfo DeviceInfo::from_json(const nlohmann::json& j) {
  try {
    DeviceInfo d;
    d.backend = j.at("backend").get<std::string>();
    d.index = j.value("index", 0);
    d.name = j.at("name").get<std::string>();
    d.properties = j.value("properties", std::map<std::string, double>{});
    d.text = j.value("text", std::map<std::string, std::string>{});
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("malformed device description: ") + e.what());
  }
}

}  // namespace ktune
