#include "registry_target.h"

#include <filesystem>
#include <functional>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"

namespace ktune::cli {

namespace fs = std::filesystem;

RegistryArgs with_run_target(const RegistryArgs& args) {
  if (args.family_from.empty()) return args;
  RegistryArgs a = args;
  const RunMetadata m = RunStore::read_metadata(a.family_from);
  const std::string run = "--family-from " + a.family_from + " is a run of " + m.family + " on the " + m.backend;
  if (a.backend_given && a.backend != m.backend)
    throw InputError(run + " backend, whose registry is " + m.backend + "/: leave out --backend " + a.backend);
  if (!a.family.empty() && a.family != m.family)
    throw InputError(run + " backend, not of " + a.family + ": leave out the family or name " + m.family);
  a.backend = m.backend;
  a.family = m.family;
  if (a.device_slug.empty()) a.device_slug = m.device.slug();
  return a;
}

KernelFamily family_of_target(const RegistryArgs& a, const Backends& backends,
                              const std::function<std::string()>& slug) {
  if (!a.family_from.empty()) return recorded_family(a.family_from, backends);
  if (a.family.empty())
    throw InputError(
        "name a kernel family (--family; `ktune kernels` lists them), give --kernel-spec FILE, or --family-from "
        "RUN_DIR (a worker's run)");
  // A built-in family needs no registry file to describe it.
  if (auto f = built_in_family(backends, a.backend, a.family)) return *f;
  return registry_family(a.family, a.backend, backends, Registry::file_for(a.registry, a.backend, slug()));
}

void require_slug_without_backend(const RegistryArgs& a, const Backends& backends) {
  if (built_in_backend(backends, a.backend)) return;
  std::string files;
  const fs::path folder = fs::path(a.registry) / a.backend;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.path().extension() == ".json") files += (files.empty() ? "" : ", ") + e.path().stem().string();
  throw InputError("the '" + a.backend + "' backend is not built into this ktune (it has: " + backend_names(backends) +
                   "), so it cannot name the device: give --device-slug SLUG (" +
                   (files.empty() ? folder.string() + " holds no registry" : folder.string() + " holds: " + files) +
                   "), or --family-from RUN_DIR, a run tuned through the worker");
}

Variables run_device_variables(const RegistryArgs& a, const std::string& slug) {
  if (a.family_from.empty()) return {};
  const DeviceInfo device = RunStore::read_metadata(a.family_from).device;
  return device.slug() == slug ? device.variables() : Variables{};
}

}  // namespace ktune::cli
