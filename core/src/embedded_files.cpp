#include "ktune/embedded_files.h"

#include <map>

#include <nlohmann/json.hpp>

#include "ktune/json_read.h"

namespace ktune {

std::vector<std::shared_ptr<const KernelSpec>> embedded_specs(const std::vector<EmbeddedFile>& embedded,
                                                              const SpecDialect& dialect) {
  std::map<std::string, std::string> files;
  for (const auto& f : embedded) files[f.name] = f.text;
  std::vector<std::shared_ptr<const KernelSpec>> specs;
  for (const auto& [name, text] : files) {
    if (name.size() < 5 || name.substr(name.size() - 5) != ".json") continue;
    specs.push_back(std::make_shared<KernelSpec>(
        KernelSpec::from_json(parse_json(text, "built-in " + name), {}, dialect, "built-in " + name, &files)));
  }
  return specs;
}

}  // namespace ktune
