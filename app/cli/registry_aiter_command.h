#pragma once
// `ktune registry export --format aiter|aiter-guide` and `registry import --format aiter`: the
// options and the printing of aiter's files (core: ktune/registry_format_aiter.h).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"
#include "registry_command.h"

namespace ktune::cli {

// --arch (both), --aiter-layout (export).
void add_aiter_options(CLI::App* sub, RegistryArgs& a, bool exporting);
// Writes the files into --output, prints each and the buckets two tuned Ms share; exit 0.
int export_aiter_files(const Registry& reg, const KernelFamily& family, const RegistryArgs& a,
                       const std::filesystem::path& registry_file);
// Reads aiter's files of the family (--arch, else the registry device's architecture, else the
// only one there) and prints what was read and what was not; returns the unmeasured entries.
std::vector<std::pair<std::string, RegistryEntry>> read_aiter_files(const RegistryArgs& a, const KernelFamily& family,
                                                                    const std::string& device_slug);

}  // namespace ktune::cli
