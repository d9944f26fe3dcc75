#include "ktune/family_description.h"

#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "ktune/worker_protocol.h"

namespace ktune {

namespace fs = std::filesystem;

nlohmann::json describe_family(const KernelFamily& family, const SearchSpace& run_space) {
  if (family.source.rfind("built-in", 0) == 0) return nullptr;
  nlohmann::json d = worker::family_to_json(family);
  if (family.default_space.parameters().empty()) d["space"] = run_space.to_json();
  return d;
}

KernelFamily family_from_description(const nlohmann::json& description, const std::string& backend,
                                     const std::string& origin) {
  try {
    if (!description.is_object()) throw InputError("expected an object, got " + description.dump());
    return worker::family_from_json(description, backend, "").family;
  } catch (const worker::ProtocolError& e) {
    throw InputError(origin + ": " + e.what());
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

Backend* built_in_backend(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& name) {
  for (const auto& b : backends)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::optional<KernelFamily> built_in_family(const std::vector<std::unique_ptr<Backend>>& backends,
                                            const std::string& backend, const std::string& name) {
  if (Backend* b = built_in_backend(backends, backend))
    for (auto& f : b->families())
      if (f.name == name) return std::move(f);
  return std::nullopt;
}

std::string backend_names(const std::vector<std::unique_ptr<Backend>>& backends) {
  std::string out;
  for (const auto& b : backends) out += (out.empty() ? "" : ", ") + b->name();
  return out;
}

KernelFamily recorded_family(const fs::path& run_dir, const std::vector<std::unique_ptr<Backend>>& backends) {
  const RunMetadata m = RunStore::read_metadata(run_dir);
  if (!m.family_description.is_null())
    return family_from_description(m.family_description, m.backend,
                                   (run_dir / "run_metadata.json").string() + ": family_description");
  if (auto f = built_in_family(backends, m.backend, m.family)) return *f;
  throw InputError("run " + run_dir.string() + " tuned '" + m.family + "' on the " + m.backend +
                   " backend, which this ktune does not have (it has: " + backend_names(backends) +
                   "), and records no description of the family (the run predates them): tune it again through its "
                   "worker, or give --kernel-spec FILE");
}

KernelFamily registry_family(const std::string& name, const std::string& backend,
                             const std::vector<std::unique_ptr<Backend>>& backends, const fs::path& registry_file) {
  if (auto f = built_in_family(backends, backend, name)) return *f;
  const Registry reg = Registry::load(registry_file);
  const auto& kept = reg.family_descriptions();
  if (const auto it = kept.find(name); it != kept.end())
    return family_from_description(it->second, backend, "registry " + registry_file.string() + ": families." + name);
  std::string why;
  if (Backend* built_in = built_in_backend(backends, backend)) {
    try {
      built_in->family(name);
    } catch (const InputError& e) {
      why = e.what();
    }
  } else {
    why = "the '" + backend + "' backend is not built into this ktune (it has: " + backend_names(backends) + ")";
  }
  const std::string family = "family '" + name + "'";
  const std::string where = fs::exists(registry_file)
                                ? "registry " + registry_file.string() + " keeps no description of " + family
                                : "there is no registry " + registry_file.string() + " to describe " + family;
  throw InputError(
      why + ", and " + where +
      ": pass --family-from RUN_DIR, a run that tuned it (`ktune tune --worker COMMAND`, whose run records "
      "the worker's family), or --kernel-spec FILE for a CUDA/HIP kernel spec");
}

}  // namespace ktune
