#include "ktune/judge.h"

#include <algorithm>

#include "ktune/error.h"

namespace ktune {

namespace {

// The same values for the same parameters, in whatever order (the registry keeps its own).
bool same_config(const Config& a, const Config& b) {
  auto x = a.values(), y = b.values();
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

}  // namespace

std::vector<PairedVerdict> judge_on_device(const RunResults& run, const RunMetadata& metadata, const RegistryDiff& diff,
                                           Backend& backend, const DeviceInfo& device, const KernelFamily& family) {
  std::vector<PairedVerdict> out;
  MeasureSettings settings = metadata.measure;
  settings.slow_abort = false;
  for (const DiffEntry& d : diff.entries) {
    if (!d.old_entry || same_config(d.old_entry->config, d.new_entry.config)) continue;
    const auto result = std::find_if(run.entries.begin(), run.entries.end(),
                                     [&](const ResultEntry& r) { return r.problem.key() == d.key; });
    if (result == run.entries.end()) continue;
    PairedVerdict v;
    v.family = d.family;
    v.key = d.key;
    const char* which = "the registry's config";
    try {
      auto session = backend.open(device, family, result->problem, metadata.seed);
      auto old_kernel = session->prepare(d.old_entry->config);
      session->validate(*old_kernel, metadata.tolerance);
      which = "the run's config";
      auto new_kernel = session->prepare(d.new_entry.config);
      session->validate(*new_kernel, metadata.tolerance);
      which = "the pair";
      const auto [old_out, new_out] = measure_pair(
          settings, [&](const SampleRequest& r) { return session->sample(*old_kernel, r); },
          [&](const SampleRequest& r) { return session->sample(*new_kernel, r); });
      v.registry_samples_ns = old_out.samples_ns;
      v.run_samples_ns = new_out.samples_ns;
    } catch (const RunError&) {
      throw;
    } catch (const std::exception& e) {
      v.note = std::string(which) + " could not be timed: " + e.what();
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ktune
