#include "info_commands.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ktune::cli {

int cmd_devices(const std::vector<std::unique_ptr<Backend>>& backends, bool json) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& b : backends) {
    const auto devices = b->devices();
    if (json) {
      for (const auto& d : devices) all.push_back(d.to_json());
      continue;
    }
    std::cout << b->name() << ": " << devices.size() << " device(s)";
    if (devices.empty() && !b->unavailable_reason().empty()) std::cout << " (" << b->unavailable_reason() << ")";
    std::cout << '\n';
    for (const auto& d : devices) {
      std::cout << "  [" << d.index << "] " << d.name << "  (registry file " << d.slug() << ".json)\n";
      for (const auto& [k, v] : d.properties) std::cout << "      " << k << " = " << v << '\n';
      for (const auto& [k, v] : d.text) std::cout << "      " << k << " = " << v << '\n';
    }
    for (const auto& [k, v] : b->versions()) std::cout << "  " << k << ": " << v << '\n';
  }
  if (json) std::cout << all.dump(2) << '\n';
  return 0;
}

int cmd_kernels(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& only) {
  for (const auto& b : backends) {
    if (!only.empty() && b->name() != only) continue;
    for (const auto& f : b->families()) {
      std::string fields;
      for (const auto& k : f.key_fields)
        fields += (fields.empty() ? "" : " ") + k.name + (k.default_value.empty() ? "" : "=" + k.default_value);
      std::cout << f.name << "  [" << b->name() << "]  " << f.description << "\n    key: " << fields
                << "\n    space: " << f.default_space.parameters().size() << " parameters, "
                << f.default_space.total_size() << " configs before pruning, " << f.default_space.constraints().size()
                << " constraints\n";
    }
  }
  return 0;
}

}  // namespace ktune::cli
