#pragma once
// Judging a run against the registry with fresh, paired numbers before applying it (`ktune apply
// --remeasure`): for each key whose registry config differs from the run's, both are built,
// validated and timed side by side on the device in alternation (measure_pair), so the class
// (faster / slower / same) comes from one ratio taken under the same clocks and temperature,
// not from two numbers taken hours apart on a hotter or cooler device.
#include <vector>

#include "ktune/backend.h"
#include "ktune/diff.h"
#include "ktune/run_store.h"

namespace ktune {

// One verdict per entry of `diff` that has a registry entry with another config. The run's
// measurement settings, tolerance and workload seed apply to both. A config that fails to build
// or validate now gets a verdict with a note and no samples (the recorded diff stands for it);
// a RunError (device lost) propagates.
std::vector<PairedVerdict> judge_on_device(const RunResults& run, const RunMetadata& metadata, const RegistryDiff& diff,
                                           Backend& backend, const DeviceInfo& device, const KernelFamily& family);

}  // namespace ktune
