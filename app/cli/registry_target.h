#pragma once
// Where lookup and `registry export / import` find their family, backend and registry file when
// the family is a worker's: --family-from RUN_DIR (the family the run recorded, its backend and
// device) or the description the registry file keeps (ktune/family_description.h).
#include <functional>
#include <string>

#include "ktune/kernel_family.h"
#include "registry_command.h"

namespace ktune::cli {

// `args` with what --family-from's run gives where the user gave nothing: the backend, the device
// slug and the family. InputError when a backend or family given differs from the run's.
RegistryArgs with_run_target(const RegistryArgs& args);
// The family of a registry command without --kernel-spec: --family-from's run's, else the built-in
// backend's, else the description kept in the registry file of device `slug()`. InputError saying
// what to pass.
KernelFamily family_of_target(const RegistryArgs& args, const Backends& backends,
                              const std::function<std::string()>& slug);
// For a backend this build does not have (a worker's), whose devices it cannot ask for a slug:
// InputError naming --device-slug, the registry files there are and --family-from. Nothing for a
// built-in backend.
void require_slug_without_backend(const RegistryArgs& args, const Backends& backends);
// The device properties the run of --family-from recorded, for lookup to check the family default
// against when the registry is that device's; empty otherwise.
Variables run_device_variables(const RegistryArgs& args, const std::string& slug);

}  // namespace ktune::cli
