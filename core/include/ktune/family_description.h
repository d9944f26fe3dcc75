#pragma once
// A family as data, for families a ktune build need not have: a worker's (Triton, numpy, ...) or
// a kernel spec's. A run records the description (run_metadata.json "family_description"), apply
// and `registry import` keep it in the registry file ("families"), so that lookup, export and
// import find the family without the worker: from a built-in backend, a recorded run, or the
// registry file itself. The description is the family as a worker's hello gives it
// (docs/worker-protocol.md).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/backend.h"
#include "ktune/kernel_family.h"
#include "ktune/search_space.h"

namespace ktune {

// The family's description, its space `run_space` when the family offers none (a worker that
// takes ktune's --space); null for a built-in family, which every ktune with its backend has.
nlohmann::json describe_family(const KernelFamily& family, const SearchSpace& run_space);
// The family a description gives, on `backend`. Throws InputError naming `origin` and the field.
KernelFamily family_from_description(const nlohmann::json& description, const std::string& backend,
                                     const std::string& origin);

// The family of the run in `run_dir`: the description it recorded, else (a built-in family's run)
// the built-in backend's. Throws InputError naming the run when neither is there.
KernelFamily recorded_family(const std::filesystem::path& run_dir,
                             const std::vector<std::unique_ptr<Backend>>& backends);

// The family `name` on `backend` for a registry command: the built-in backend's, else the
// description the registry file `registry_file` keeps. Throws InputError saying what to pass
// (--family-from RUN_DIR, --kernel-spec FILE) when neither has it.
KernelFamily registry_family(const std::string& name, const std::string& backend,
                             const std::vector<std::unique_ptr<Backend>>& backends,
                             const std::filesystem::path& registry_file);

// The built-in backend of that name, or null (a worker's backend).
Backend* built_in_backend(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& name);
// "cpu, cuda": the backends this build has, for messages.
std::string backend_names(const std::vector<std::unique_ptr<Backend>>& backends);
// That backend's family `name`, or nothing.
std::optional<KernelFamily> built_in_family(const std::vector<std::unique_ptr<Backend>>& backends,
                                            const std::string& backend, const std::string& name);

}  // namespace ktune
