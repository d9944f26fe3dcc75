#pragma once
// Judging a run against the registry with fresh, paired numbers before applying it (`ktune apply
// --remeasure`): for each key whose registry config differs from the run's, both are built,
// validated and timed side by side on the device in alternation (measure_pair), so the class
// (faster / slower / same) comes from one ratio taken under the same clocks and temperature,
// not from two numbers taken hours apart on a hotter or cooler device.
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "ktune/backend.h"
#include "ktune/diff.h"
#include "ktune/run_store.h"

namespace ktune {

// One verdict per entry of `diff` that has a registry entry with another config. The run's
// measurement settings, tolerance and workload seed apply to both. A config that fails to build
// or validate now gets a verdict with a note and no samples (the recorded diff stands for it);
// a RunError (device lost) propagates. `on_verdict` sees each verdict as it is made (a front
// end's progress); returning false stops after it.
using VerdictCallback = std::function<bool(const PairedVerdict& verdict, std::size_t done, std::size_t total)>;
std::vector<PairedVerdict> judge_on_device(const RunResults& run, const RunMetadata& metadata, const RegistryDiff& diff,
                                           Backend& backend, const DeviceInfo& device, const KernelFamily& family,
                                           const VerdictCallback& on_verdict = {});

// The same for a run as recorded, against the registry under `registry_root`: its backend and
// built-in family from `backends`, on the device it was measured on. Another device (or none)
// is an InputError: its numbers would not judge this run's.
std::vector<PairedVerdict> judge_run(const RunResults& run, const RunMetadata& metadata,
                                     const std::filesystem::path& registry_root,
                                     const std::vector<std::unique_ptr<Backend>>& backends,
                                     const VerdictCallback& on_verdict = {});

}  // namespace ktune
