#include "ktune/judge.h"

#include <algorithm>

#include "ktune/error.h"
#include "ktune/family_description.h"

namespace ktune {

std::vector<PairedVerdict> judge_on_device(const RunResults& run, const RunMetadata& metadata, const RegistryDiff& diff,
                                           Backend& backend, const DeviceInfo& device, const KernelFamily& family,
                                           const VerdictCallback& on_verdict) {
  std::vector<PairedVerdict> out;
  MeasureSettings settings = metadata.measure;
  settings.slow_abort = false;
  // Keys with another config in the registry and a result in the run: the ones to time.
  std::vector<std::pair<const DiffEntry*, const ResultEntry*>> todo;
  for (const DiffEntry& d : diff.entries) {
    if (!d.old_entry || d.old_entry->config.same_values(d.new_entry.config)) continue;
    const auto result = std::find_if(run.entries.begin(), run.entries.end(),
                                     [&](const ResultEntry& r) { return r.problem.key() == d.key; });
    if (result != run.entries.end()) todo.emplace_back(&d, &*result);
  }
  for (const auto& [dp, result] : todo) {
    const DiffEntry& d = *dp;
    PairedVerdict v;
    v.family = d.family;
    v.key = d.key;
    v.registry_config = d.old_entry->config;
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
    if (on_verdict && !on_verdict(out.back(), out.size(), todo.size())) break;
  }
  return out;
}

std::vector<PairedVerdict> judge_run(const RunResults& run, const RunMetadata& metadata,
                                     const std::filesystem::path& registry_root,
                                     const std::vector<std::unique_ptr<Backend>>& backends,
                                     const VerdictCallback& on_verdict) {
  if (!built_in_backend(backends, metadata.backend))
    throw InputError("--remeasure times both configs on the run's backend, " + metadata.backend +
                     ", which is not built into this ktune (it has: " + backend_names(backends) +
                     "): a worker's run is applied on its recorded numbers (leave out --remeasure), or tuned again "
                     "through its worker");
  Backend& backend = find_backend(backends, metadata.backend);
  const DeviceInfo device = find_device(backend, metadata.device.index);
  if (device.slug() != metadata.device.slug())
    throw InputError("re-measuring times configs on the run's device, " + metadata.device.name + "; device " +
                     std::to_string(metadata.device.index) + " of the " + metadata.backend + " backend here is " +
                     device.name);
  const KernelFamily family = backend.family(metadata.family);
  return judge_on_device(run, metadata, diff_run(run, registry_root), backend, device, family, on_verdict);
}

}  // namespace ktune
