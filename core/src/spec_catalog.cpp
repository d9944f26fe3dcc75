#include "ktune/spec_catalog.h"

#include <map>

#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/json_read.h"

namespace ktune {

namespace {

bool is_builtin(const KernelSpec& s) { return s.family().source.rfind("built-in", 0) == 0; }

}  // namespace

SpecCatalog::SpecCatalog(const std::vector<EmbeddedFile>& builtin, const SpecDialect& dialect) : dialect_(dialect) {
  std::map<std::string, std::string> files;
  for (const auto& f : builtin) files[f.name] = f.text;
  for (const auto& [name, text] : files) {
    if (name.size() < 5 || name.substr(name.size() - 5) != ".json") continue;
    specs_.push_back(std::make_shared<KernelSpec>(
        KernelSpec::from_json(parse_json(text, "built-in " + name), {}, dialect_, "built-in " + name, &files)));
  }
}

std::vector<KernelFamily> SpecCatalog::builtin_families() const {
  std::lock_guard lock(mutex_);
  std::vector<KernelFamily> out;
  for (const auto& s : specs_)
    if (is_builtin(*s)) out.push_back(s->family());
  return out;
}

KernelFamily SpecCatalog::load(const std::filesystem::path& file) {
  auto spec = std::make_shared<KernelSpec>(KernelSpec::load(file, dialect_));
  std::lock_guard lock(mutex_);
  specs_.push_back(spec);
  return spec->family();
}

std::shared_ptr<const KernelSpec> SpecCatalog::find(const KernelFamily& family) const {
  std::lock_guard lock(mutex_);
  for (auto it = specs_.rbegin(); it != specs_.rend(); ++it)
    if ((*it)->family().name == family.name && (*it)->family().source == family.source) return *it;
  std::string builtin;
  for (const auto& s : specs_)
    if (is_builtin(*s)) builtin += (builtin.empty() ? "" : ", ") + s->family().name;
  throw InputError("the " + dialect_.backend + " backend has no kernel family '" + family.name + "' from " +
                   family.source + " (built-in: " + builtin + "; load your own with --kernel-spec FILE)");
}

}  // namespace ktune
